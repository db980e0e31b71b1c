import ChorusCore
import Testing
import VideoForwarder

/// Proves the slot ranking (pins, speakers, join order) and the stable placement rule.
@Suite("SlotAssignment: which publisher each of a subscriber's video slots shows")
struct SlotAssignmentTests {
    private func assign(
        slots: Int, subscriber: String = "me", publishers: [String], pinned: [String] = [],
        recent: [String] = [], current: [String?] = []
    ) -> [String?] {
        SlotAssignment.assign(
            slots: slots, subscriber: subscriber, publishers: publishers, pinned: pinned, recentSpeakers: recent,
            current: current)
    }

    /// The subscriber never sees itself, even when pinned, a recent speaker or in its old slots.
    @Test func neverTheSubscriberItself() {
        let result = assign(
            slots: 3, publishers: ["me", "a", "b"], pinned: ["me"], recent: ["me"], current: ["me", nil, nil])
        #expect(result == ["a", "b", nil])
        #expect(!result.contains("me"))
    }

    /// Without pins or speakers, publishers fill the slots in join order; too few leave the
    /// trailing slots empty; zero slots give an empty list.
    @Test func joinOrderAndEmptySlots() {
        #expect(assign(slots: 3, publishers: ["a", "b", "c", "d"]) == ["a", "b", "c"])
        #expect(assign(slots: 4, publishers: ["b", "a"]) == ["b", "a", nil, nil])
        #expect(assign(slots: 2, publishers: []) == [nil, nil])
        #expect(assign(slots: 2, publishers: ["me"]) == [nil, nil])
        #expect(assign(slots: 0, publishers: ["a"]).isEmpty)
    }

    /// Pinned publishers come first, in pin order, in slots 0…, ahead of speakers and of the
    /// slots others held; pins that do not publish are skipped; more pins than slots keep the
    /// first pins.
    @Test func pinnedFirstInPinOrder() {
        #expect(assign(slots: 3, publishers: ["a", "b", "c", "d"], pinned: ["d", "c"], recent: ["a"])
            == ["d", "c", "a"])
        #expect(assign(slots: 3, publishers: ["a", "b", "c"], pinned: ["gone", "c"]) == ["c", "a", "b"])
        #expect(assign(slots: 2, publishers: ["a", "b", "c", "d"], pinned: ["c", "d", "a"]) == ["c", "d"])
        // a held slot 0; the pin takes it and a moves to the free slot.
        #expect(assign(slots: 2, publishers: ["a", "b", "d"], pinned: ["d"], current: ["a", nil]) == ["d", "a"])
    }

    /// Recent speakers (most recent first) rank ahead of join order.
    @Test func recentSpeakersBeforeJoinOrder() {
        #expect(assign(slots: 2, publishers: ["a", "b", "c", "d"], recent: ["d", "c"]) == ["d", "c"])
        #expect(assign(slots: 3, publishers: ["a", "b", "c", "d"], recent: ["c", "left"]) == ["c", "a", "b"])
    }

    /// A publisher still chosen keeps its slot; the one that drops out frees its slot for the
    /// newcomer; slots beyond `slots` in `current` are ignored.
    @Test func stablePlacement() {
        let publishers = ["a", "b", "c", "d"]
        let first = assign(slots: 3, publishers: publishers, current: ["c", "a", nil])
        #expect(first == ["c", "a", "b"])
        // d speaks: c (last in join order) drops out and d takes its slot; a and b stay put.
        let second = assign(slots: 3, publishers: publishers, recent: ["d"], current: first)
        #expect(second == ["d", "a", "b"])
        // Nothing changed: same answer.
        #expect(assign(slots: 3, publishers: publishers, recent: ["d"], current: second) == second)
        // A longer `current` (the slot count shrank) is cut to the slots.
        #expect(assign(slots: 2, publishers: publishers, current: ["b", "a", "c"]) == ["b", "a"])
    }

    /// More publishers than slots: exactly `slots` distinct publishers, by rank, with the one
    /// already shown keeping its slot.
    @Test func morePublishersThanSlots() {
        let publishers = (0..<20).map { "p\($0)" }
        #expect(assign(slots: 4, publishers: publishers, recent: ["p19", "p7"]) == ["p19", "p7", "p0", "p1"])
        let result = assign(slots: 4, publishers: publishers, recent: ["p19", "p7"], current: [nil, "p1", nil, "p12"])
        #expect(result == ["p19", "p1", "p7", "p0"])
    }

    /// Duplicates in the publisher, speaker and current lists are counted once.
    @Test func duplicatesInPublishersSpeakersAndCurrent() {
        #expect(assign(slots: 3, publishers: ["a", "a", "b"]) == ["a", "b", nil])
        #expect(assign(slots: 3, publishers: ["a", "b", "c"], recent: ["c", "c", "b"]) == ["c", "b", "a"])
        #expect(assign(slots: 2, publishers: ["a", "b"], current: ["a", "a"]) == ["a", "b"])
    }

    /// A publisher pinned twice still takes one slot: a subscriber's pin list with a duplicate
    /// must not show the same camera in two slots and push another publisher out.
    @Test func duplicatePinTakesOneSlot() {
        let result = assign(slots: 2, publishers: ["a", "b"], pinned: ["b", "b"])
        #expect(result == ["b", "a"])
        #expect(Set(result.compactMap { $0 }).count == result.compactMap { $0 }.count, "a publisher in two slots")
    }

    // -- slots of different codecs ------------------------------------------------------------

    /// Cameras by codec: `v…` send VP8, `h…` H.264; anything else sends a codec no slot has.
    private static func codec(_ id: String) -> VideoCodec? {
        id.hasPrefix("v") ? .vp8 : id.hasPrefix("h") ? .h264 : nil
    }

    private func assign(
        slotCodecs: [VideoCodec], subscriber: String = "me", publishers: [String], pinned: [String] = [],
        recent: [String] = [], current: [String?] = []
    ) -> [String?] {
        SlotAssignment.assign(
            slotKinds: slotCodecs, subscriber: subscriber, publishers: publishers, kind: Self.codec,
            pinned: pinned, recentSpeakers: recent, current: current)
    }

    /// The case seen end to end (a VP8 slot, then an H.264 slot; the H.264 camera the recent
    /// speaker): the codec-blind rule put the H.264 camera in the VP8 slot and the VP8 camera in
    /// the H.264 slot, where neither can ever be forwarded (the slots stayed black). Each camera
    /// goes to the slot of its codec, whatever the ranking.
    @Test func eachCameraGoesToASlotOfItsCodec() {
        let blind = SlotAssignment.assign(
            slots: 2, subscriber: "me", publishers: ["v1", "h1"], pinned: [], recentSpeakers: ["h1"], current: [])
        #expect(blind == ["h1", "v1"])  // what a codec-blind placement gives
        #expect(assign(slotCodecs: [.vp8, .h264], publishers: ["v1", "h1"], recent: ["h1"]) == ["v1", "h1"])
        #expect(assign(slotCodecs: [.h264, .vp8], publishers: ["v1", "h1"]) == ["h1", "v1"])
        #expect(assign(slotCodecs: [.vp8, .h264, .vp8], publishers: ["h1", "v1", "v2", "h2"])
            == ["v1", "h1", "v2"])
    }

    /// No slot of its codec, or an unknown codec: not shown, and it takes no slot from others.
    @Test func aCameraWithoutASlotOfItsCodecIsNotShown() {
        #expect(assign(slotCodecs: [.vp8, .vp8], publishers: ["h1", "v1", "x1"]) == ["v1", nil])
        #expect(assign(slotCodecs: [.h264], publishers: ["v1", "v2"]) == [nil])
        #expect(assign(slotCodecs: [], publishers: ["v1"]).isEmpty)
    }

    /// Ranking, pins and stable placement hold within each codec: a pinned H.264 camera takes
    /// the first H.264 slot (not slot 0, a VP8 slot); the subscriber never sees itself; a slot
    /// held by a camera of the other codec (the slot's codec cannot change, but the rule must
    /// not trust `current`) is reassigned.
    @Test func rankingPinsAndPlacementWithinEachCodec() {
        #expect(assign(slotCodecs: [.vp8, .h264, .h264], publishers: ["v1", "h1", "h2", "h3"], pinned: ["h3"])
            == ["v1", "h3", "h1"])
        #expect(assign(slotCodecs: [.vp8, .h264], subscriber: "v1", publishers: ["v1", "v2", "h1"])
            == ["v2", "h1"])
        #expect(assign(slotCodecs: [.h264, .h264], publishers: ["h1", "h2", "h3"], recent: ["h3"],
                       current: [nil, "h1"]) == ["h3", "h1"])
        #expect(assign(slotCodecs: [.vp8, .h264], publishers: ["v1", "h1"], current: ["h1", "v1"]) == ["v1", "h1"])
    }

    /// With one codec the rule is exactly the codec-blind one, over random rooms.
    @Test func oneCodecIsTheCodecBlindRule() {
        var generator = SplitMix64(seed: 0x510_7C0DEC)
        let pool = (0..<12).map { "v\($0)" }
        for _ in 0..<2_000 {
            let slots = Int.random(in: 0...5, using: &generator)
            let pick = { (count: Int, generator: inout SplitMix64) in
                (0..<count).map { _ in pool[Int.random(in: 0..<pool.count, using: &generator)] }
            }
            let publishers = pick(Int.random(in: 0...8, using: &generator), &generator)
            let pinned = pick(Int.random(in: 0...3, using: &generator), &generator)
            let recent = pick(Int.random(in: 0...3, using: &generator), &generator)
            let current: [String?] = (0..<Int.random(in: 0...6, using: &generator)).map { _ in
                Bool.random(using: &generator) ? nil : pool[Int.random(in: 0..<pool.count, using: &generator)]
            }
            let subscriber = pool[Int.random(in: 0..<pool.count, using: &generator)]
            let blind = SlotAssignment.assign(
                slots: slots, subscriber: subscriber, publishers: publishers, pinned: pinned, recentSpeakers: recent,
                current: current)
            let byCodec = assign(slotCodecs: Array(repeating: .vp8, count: slots), subscriber: subscriber,
                                 publishers: publishers, pinned: pinned, recent: recent, current: current)
            #expect(byCodec == blind, "slots \(slots) publishers \(publishers) pinned \(pinned) current \(current)")
        }
    }
}
