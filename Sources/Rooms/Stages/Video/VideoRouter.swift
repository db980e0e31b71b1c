import ChorusCore
import RTP
import VideoForwarder

/// What the video router may send one subscriber, as the bandwidth stage knows it: the bit/s
/// for its video (its downlink less the audio's share), and the same from the connection's own
/// measurement only (nil for a subscriber known only by its REMB), which bounds repairs.
struct VideoBudget {
    var video: Int
    var measured: Int?
}

/// The bandwidth stage's answer for each subscriber, passed in by the room core on the calls
/// that choose layers or answer NACKs (the router keeps no copy of another stage's state).
typealias VideoBudgets = (CallID) -> VideoBudget?

/// The room's video (the SFU): publishers' cameras forwarded into each subscriber's video
/// slots. It owns every video member's publisher state (layers, caches for NACKs, loss
/// detection, keyframe throttles, the estimates its viewers send) and slots (rewriters, RTX
/// streams, layer choice), the slot assignment (pins, recent dominant speakers, join order),
/// and the index of who shows whom.
///
/// A value the room core owns and drives with `now` and the output as parameters: `add` and
/// `remove` members (from their `MemberMedia`), `setEstablished`, `setPaused`, `setPinned`,
/// `setSlotHeights`, `noteDominantSpeaker`; per packet `receive` (a camera's RTP) and
/// `receiveFeedback` (a subscriber's PLI, FIR, NACK, estimate); `tick` every 20 ms (keyframe
/// requests, NACKs out, inactivity, estimates to publishers, layer choice once a second); and
/// `sendProbe` when the bandwidth stage probes a subscriber's path on its RTX stream. It sends
/// through the members' connections and never asks what kind a member is.
struct VideoRouter {
    /// Members with a camera or video slots (fixed at join), in join order: the slot order of
    /// publishers nobody pinned, and what the per-tick scans walk (an audio-only member is
    /// never here).
    private(set) var members: [VideoMember] = []
    var byCallId: [CallID: VideoMember] = [:]
    /// The room's dominant speakers, most recent first: they rank next after pins for slots.
    var recentSpeakers: [CallID] = []
    /// For each publisher, the (subscriber, slot index) pairs showing it or switching to it:
    /// rebuilt when slots are reassigned, so a packet visits only its own viewers.
    var slotViewers: [CallID: [(subscriber: CallID, slot: Int)]] = [:]
    /// Reused buffer for the packets the router writes (one per slot, then protected).
    var scratch: [UInt8] = []
    /// When the tick last looked for slots still waiting on a keyframe.
    var lastKeyframeRepeatScan: MediaTime?

    /// A publisher that sends nothing for this long is reported paused (reason `inactive`).
    static let inactivityNanoseconds: UInt64 = 2_000_000_000
    /// Bounds of the bandwidth passed to publishers: what a subscriber asks, within reason.
    static let estimateBounds: ClosedRange<UInt64> = 100_000...4_000_000
    /// How long a slot waits for its new publisher's keyframe before asking again: a PLI can
    /// be lost, and publishers that make keyframes only when asked (Chromium, aiortc) would
    /// otherwise leave the slot on its old picture, or empty, until the next one.
    static let keyframeRepeatNanoseconds: UInt64 = 1_000_000_000

    /// Takes a member with video in (a member without camera or slots is not kept).
    mutating func add(_ callId: CallID, userId: UserID, media: MemberMedia, connection: any MemberConnection) {
        guard media.hasVideo else { return }
        let member = VideoMember(callId: callId, userId: userId, media: media, connection: connection)
        members.append(member)
        byCallId[callId] = member
    }

    /// Forgets a member who left (any member: a dominant speaker may have had no video), and
    /// gives its slots' viewers other publishers.
    mutating func remove(_ callId: CallID, now: MediaTime, budgets: VideoBudgets, into output: inout RoomOutput) {
        recentSpeakers.removeAll { $0 == callId }
        if let member = byCallId.removeValue(forKey: callId) {
            members.removeAll { $0 === member }
        }
        for member in members { member.publisher?.estimates[callId] = nil }
        reassignSlots(now: now, budgets: budgets, into: &output)
    }

    /// The member is connected: it may be shown and be sent video now.
    mutating func setEstablished(_ callId: CallID, now: MediaTime, budgets: VideoBudgets, into output: inout RoomOutput) {
        byCallId[callId]?.established = true
        reassignSlots(now: now, budgets: budgets, into: &output)
    }

    /// The member paused or resumed its camera: it leaves every slot at once, or comes back (its
    /// keyframe is requested by the slot switch).
    mutating func setPaused(_ callId: CallID, _ paused: Bool, now: MediaTime, budgets: VideoBudgets,
                            into output: inout RoomOutput) {
        guard let member = byCallId[callId], member.paused != paused else { return }
        member.paused = paused
        reassignSlots(now: now, budgets: budgets, into: &output)
    }

    /// Sets a subscriber's pinned publishers (unknown IDs are kept: they may join later).
    mutating func setPinned(_ pinned: [CallID], for subscriber: CallID, now: MediaTime, budgets: VideoBudgets,
                            into output: inout RoomOutput) {
        var unique: [CallID] = []
        for id in pinned where id != subscriber && !unique.contains(id) { unique.append(id) }
        byCallId[subscriber]?.pinned = unique
        reassignSlots(now: now, budgets: budgets, into: &output)
    }

    /// Caps the picture height of some of a subscriber's slots (by mid; unknown mids are
    /// ignored: the API has checked them); the layers are chosen again at the next tick.
    func setSlotHeights(_ heights: [SlotHeight], for subscriber: CallID) {
        guard let member = byCallId[subscriber] else { return }
        for height in heights {
            guard let index = member.slots.firstIndex(where: { $0.mid == height.mid }) else { continue }
            member.slots[index].maximumHeight = height.maximumHeight
        }
        member.layersAllocatedAt = nil
    }

    /// The dominant speaker changed: it moves to the front of the recent-speakers list that
    /// ranks publishers for slots.
    mutating func noteDominantSpeaker(_ callId: CallID, now: MediaTime, budgets: VideoBudgets,
                                      into output: inout RoomOutput) {
        recentSpeakers.removeAll { $0 == callId }
        recentSpeakers.insert(callId, at: 0)
        if recentSpeakers.count > 32 { recentSpeakers.removeLast() }
        reassignSlots(now: now, budgets: budgets, into: &output)
    }

    /// Whether the member publishes a camera or watches slots.
    func hasVideo(_ callId: CallID) -> Bool { byCallId[callId] != nil }

    /// The member as events name it.
    func eventMember(_ callId: CallID) -> EventMember {
        EventMember(callId: callId, userId: byCallId[callId]?.userId)
    }
}
