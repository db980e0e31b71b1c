import ChorusCore
import Foundation
import PeerTransport

extension RoomCore {
    /// Ends a call at `now`: stops routing to it, takes it out of every stage, and emits
    /// `participant.ended` with the cause and what the stages measured of it (the call
    /// record's server statistics). Returns false when there was no such call.
    @discardableResult
    public func end(_ callId: CallID, cause: EndCause, now: MediaTime, into output: inout RoomOutput) -> Bool {
        endCall(callId, cause: cause, now: now, into: &output)
    }

    @discardableResult
    func endCall(_ callId: CallID, cause: EndCause, now: MediaTime, into output: inout RoomOutput) -> Bool {
        guard let member = members.removeValue(forKey: callId) else { return false }
        joinOrder.removeAll { $0 === member }
        let record = callEnd(of: member, cause: cause)
        let goodbyeSources = [member.connection.rtcpSSRC] + video.sentSources(of: callId)
        // Layer switches per minute of known downlink, for calls that watched video 10 s or more.
        let seconds = bandwidth.sampledSeconds(of: callId)
        if let switches = video.layerSwitches(of: callId), seconds >= 10 {
            output.counters.layerSwitchRates.append(Double(switches) * 60 / Double(seconds))
        }
        taps.memberLeft(callId, into: &output)
        audio.remove(member.audio)
        bandwidth.remove(callId)
        quality.remove(callId)
        video.remove(callId, now: now, budgets: { self.bandwidth.budget(of: $0) }, into: &output)
        output.routing.append(contentsOf: member.connection.routes(joining: false, callId: callId))
        for address in member.boundAddresses { output.routing.append(.unbind(address)) }
        if cause == .timeout {
            logger.info("consent expired: no check or authenticated media within the timeout",
                        metadata: ["callId": "\(callId)", "userId": "\(member.userId)"])
        }
        output.emit(.participantEnded(record), at: now)
        // The leave is on the event stream; now the peer hears it too (BYE, close_notify),
        // unless its connection failed, in which case there is no one to tell.
        if cause != .failed { member.connection.close(sources: goodbyeSources, now: now, transmits: &output.transmits) }
        return true
    }

    /// The call record of a member ending now: its connection's counters and what each stage
    /// measured (audio figures caught up with this tick, video counters, its slots, downlink,
    /// quality).
    private func callEnd(of member: Member, cause: EndCause) -> CallEnd {
        var record = CallEnd(member: member.eventMember, cause: cause, established: member.establishedAt != nil)
        record.media = member.connection.counters
        record.audio = audio.statistics(member.audio) ?? [:]
        record.video = video.statistics(of: member.callId)
        if !member.media.slots.isEmpty { record.slots = video.slotViews(of: member.callId) }
        record.downlink = bandwidth.downlinkSummary(of: member.callId)
        record.quality = quality.summary(of: member.callId)
        return record
    }
}
