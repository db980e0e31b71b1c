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
}
