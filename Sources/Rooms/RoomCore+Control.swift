import ChorusCore
import Foundation

extension RoomCore {
    public func participantList() -> [ParticipantSnapshot] {
        joinOrder.compactMap { participants[$0].map(snapshot) }
    }

    /// The ICE ufrag the call's STUN is routed by now (new after each ICE restart).
    public func participantUfrag(_ callId: CallID) -> String? { participants[callId]?.ufrag }

    /// True when the call publishes a camera or watches video slots: its datagrams are then
    /// handled on arrival, not once per tick (the socket's `ReadSchedule`).
    public func participantHasVideo(_ callId: CallID) -> Bool {
        guard let participant = participants[callId] else { return false }
        return participant.video.publisher != nil || !participant.video.slots.isEmpty
    }

    public func participant(_ callId: CallID) -> ParticipantSnapshot? {
        participants[callId].map(snapshot)
    }

    /// `participant.snapshot()` with its audio statistics caught up with this tick.
    func snapshot(_ participant: Participant) -> ParticipantSnapshot {
        participant.audio.noteSilentMixes(through: audioTicks)
        return participant.snapshot()
    }

    /// True when `userId` has a call in this room (a user may then read the room's events).
    public func hasParticipant(userId: UserID) -> Bool {
        participants.values.contains { $0.userId == userId }
    }

    /// Mutes/unmutes audio, pauses/resumes video, sets pinned publishers; emits an event per
    /// change. Pausing takes the publisher out of every slot at once; resuming puts it back
    /// (its keyframe is requested by the slot switch).
    public func update(_ callId: CallID, audioMuted: Bool?, videoPaused: Bool?, pinned: [CallID]? = nil,
                       slotHeights: [SlotHeight]? = nil, now time: MediaTime, into output: inout RoomOutput)
        -> ParticipantSnapshot?
    {
        step(at: time, &output) {
            if let slotHeights { setSlotHeights(slotHeights, for: callId) }
            return updateParticipant(callId, audioMuted: audioMuted, videoPaused: videoPaused, pinned: pinned)
        }
    }

    /// Caps the picture height of some of a subscriber's slots (by mid; unknown mids are
    /// ignored: the API has checked them); the layers are chosen again at the next tick.
    private func setSlotHeights(_ heights: [SlotHeight], for subscriber: CallID) {
        guard let participant = participants[subscriber] else { return }
        for height in heights {
            guard let index = participant.video.slots.firstIndex(where: { $0.mid == height.mid }) else { continue }
            participant.video.slots[index].maximumHeight = height.maximumHeight
        }
        participant.video.layersAllocatedAt = nil
    }

    private func updateParticipant(_ callId: CallID, audioMuted: Bool?, videoPaused: Bool?, pinned: [CallID]?)
        -> ParticipantSnapshot?
    {
        guard let participant = participants[callId] else { return nil }
        var slotsChanged = false
        let base: [String: EventField] = [
            "callId": .string(callId.rawValue), "userId": .string(participant.userId.rawValue),
        ]
        if let audioMuted, audioMuted != participant.audioMuted {
            participant.audioMuted = audioMuted
            emit(audioMuted ? .audioMuted : .audioUnmuted, base)
        }
        if let videoPaused, videoPaused != participant.videoPaused {
            participant.videoPaused = videoPaused
            var fields = base
            if videoPaused { fields["reason"] = .string("request") }
            emit(videoPaused ? .videoPaused : .videoResumed, fields)
            slotsChanged = true
        }
        if let pinned {
            setPinned(pinned, for: callId, now: now)
        } else if slotsChanged {
            reassignSlots(now: now)
        }
        return participants[callId].map(snapshot)
    }

    /// Counts of participants by state, for /metrics.
    public func stateCounts() -> (progressing: Int, established: Int) {
        var progressing = 0, established = 0
        for participant in participants.values {
            if participant.state == .established { established += 1 } else { progressing += 1 }
        }
        return (progressing, established)
    }
}
