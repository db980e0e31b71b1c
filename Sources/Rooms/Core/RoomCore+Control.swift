import ChorusCore
import Foundation

extension RoomCore {
    public func participantList() -> [ParticipantSnapshot] { joinOrder.map(snapshot) }

    /// The ICE ufrag a WebRTC member's STUN is routed by now (new after each ICE restart).
    public func participantUfrag(_ callId: CallID) -> String? {
        (members[callId]?.connection as? WebRTCConnection)?.ufrag
    }

    /// True when the call publishes a camera or watches video slots: its datagrams are then
    /// handled on arrival, not once per tick (the socket's `ReadSchedule`).
    public func participantHasVideo(_ callId: CallID) -> Bool { members[callId]?.media.hasVideo ?? false }

    public func participant(_ callId: CallID) -> ParticipantSnapshot? { members[callId].map(snapshot) }

    /// The member as the API shows it, from the member table and what each stage measured.
    func snapshot(_ member: Member) -> ParticipantSnapshot {
        let callId = member.callId
        return ParticipantSnapshot(
            callId: callId, userId: member.userId, displayName: member.displayName, state: member.state, endCause: nil,
            joinedAt: member.joinedAt, establishedAt: member.establishedAt, audioMuted: member.audioMuted,
            videoPaused: member.videoPaused, counters: member.connection.counters,
            audioStatistics: audio.statistics(member.audio) ?? [:], videoStatistics: video.statistics(of: callId),
            pinned: video.pinned(by: callId), srtpProfile: member.security, downlink: bandwidth.downlink(of: callId),
            slots: video.slotViews(of: callId), publishedLayers: video.publishedLayers(of: callId))
    }

    /// True when `userId` has a call in this room (a user may then read the room's events).
    public func hasParticipant(userId: UserID) -> Bool {
        members.values.contains { $0.userId == userId }
    }

    /// Mutes/unmutes audio, pauses/resumes video, sets pinned publishers, caps slot heights;
    /// emits an event per change. Pausing takes the publisher out of every slot at once;
    /// resuming puts it back (its keyframe is requested by the slot switch).
    public func update(_ callId: CallID, audioMuted: Bool?, videoPaused: Bool?, pinned: [CallID]? = nil,
                       slotHeights: [SlotHeight]? = nil, now: MediaTime, into output: inout RoomOutput)
        -> ParticipantSnapshot?
    {
        guard let member = members[callId] else { return nil }
        if let slotHeights { video.setSlotHeights(slotHeights, for: callId) }
        if let audioMuted, audioMuted != member.audioMuted {
            member.audioMuted = audioMuted
            audio.setMuted(member.audio, audioMuted)
            output.emit(audioMuted ? .audioMuted(member.eventMember) : .audioUnmuted(member.eventMember), at: now)
        }
        if let videoPaused, videoPaused != member.videoPaused {
            member.videoPaused = videoPaused
            output.emit(videoPaused ? .videoPaused(member.eventMember, reason: .request) : .videoResumed(member.eventMember),
                        at: now)
            video.setPaused(callId, videoPaused, now: now, budgets: { self.bandwidth.budget(of: $0) }, into: &output)
        }
        if let pinned {
            video.setPinned(pinned, for: callId, now: now, budgets: { self.bandwidth.budget(of: $0) }, into: &output)
        }
        return members[callId].map(snapshot)
    }

    /// Counts of members by state, for /metrics.
    public func stateCounts() -> (progressing: Int, established: Int) {
        var progressing = 0, established = 0
        for member in joinOrder {
            if member.state == .established { established += 1 } else { progressing += 1 }
        }
        return (progressing, established)
    }
}
