import ChorusCore
import ICELite
import PeerTransport
import SDP

/// What the server answers to an ICE restart or a re-offer.
public struct RestartAnswer: Sendable, Equatable {
    /// The full SDP answer (same media, our current credentials, a higher session version).
    public let sdp: String
    /// Our ICE credentials for the current generation.
    public let ufrag: String
    public let password: String
    /// False when the offer kept the ICE credentials: nothing was restarted.
    public let restarted: Bool
}

/// Why a re-offer or ICE restart was refused; the API maps each to a 4xx naming it.
public enum RestartError: Error, Equatable, Sendable {
    case noSuchCall
    /// The offer does not parse or does not have Chorus's shape (422, with the rule's code).
    case offerRejected(code: String, message: String)
    /// The offer's DTLS fingerprints differ from the call's: a new association is a new call.
    case fingerprintChanged
    /// The offer's media sections differ from the call's (added, removed or reordered).
    case mediaChanged
    case invalidCredentials
}

extension RoomCore {
    /// A new offer for a WebRTC member's call (JSEP re-offer): with new ICE credentials it
    /// restarts ICE; with the same ones it changes nothing and gets the current answer. The
    /// media must stay as negotiated, and the DTLS fingerprint the same.
    public func renegotiate(_ callId: CallID, offer: String, now time: MediaTime, into output: inout RoomOutput)
        throws(RestartError) -> RestartAnswer
    {
        guard let participant = members[callId]?.connection as? WebRTCConnection else { throw .noSuchCall }
        let analysis: OfferAnalysis
        do {
            analysis = try OfferAnalysis(offer: try SessionDescription(parsing: offer), videoSlots: settings.videoSlots)
        } catch {
            throw .offerRejected(code: error.code, message: error.message)
        }
        let current = participant.answer.analysis
        guard Set(analysis.supportedFingerprints) == Set(current.supportedFingerprints) else { throw .fingerprintChanged }
        guard analysis.sections.map(\.mid) == current.sections.map(\.mid),
              analysis.sections.map(\.role) == current.sections.map(\.role)
        else { throw .mediaChanged }
        let remote: ICECredentials
        do {
            remote = try ICECredentials(ufrag: analysis.iceUfrag, password: analysis.icePwd)
        } catch {
            throw .invalidCredentials
        }
        return try restartICE(callId, remote: remote, now: time, into: &output)
    }

    /// ICE restart with the peer's new credentials (from a re-offer, or a WHIP
    /// `application/trickle-ice-sdpfrag` PATCH, RFC 9725 §4.3): new server credentials, the
    /// new ufrag routed to the call and the old one forgotten; the call, its DTLS and SRTP and
    /// its room state stay. The same credentials again change nothing.
    public func restartICE(_ callId: CallID, remote: ICECredentials, now time: MediaTime, into output: inout RoomOutput)
        throws(RestartError) -> RestartAnswer
    {
        guard let member = members[callId], let participant = member.connection as? WebRTCConnection else {
            throw .noSuchCall
        }
        guard remote != participant.transport.remoteICE else { return try currentAnswer(participant, restarted: false) }
        let local = ICECredentials.random()
        participant.transport.restartICE(local: local, remote: remote, now: time)
        output.routing.append(.unregister(ufrag: participant.ufrag, callId: callId))
        output.routing.append(.register(ufrag: local.ufrag, callId: callId))
        participant.ufrag = local.ufrag
        participant.answer.local.iceUfrag = local.ufrag
        participant.answer.local.icePwd = local.password
        participant.answer.local.sessionVersion &+= 1
        output.emit(.participantICERestarted(member.eventMember), at: time)
        return try currentAnswer(participant, restarted: true)
    }

    private func currentAnswer(_ participant: WebRTCConnection, restarted: Bool) throws(RestartError) -> RestartAnswer {
        let source = participant.answer
        let sdp: String
        do {
            sdp = try AnswerBuilder(analysis: source.analysis, local: source.local).buildText()
        } catch {
            throw .offerRejected(code: "internal", message: "answer: \(error)")
        }
        return RestartAnswer(sdp: sdp, ufrag: source.local.iceUfrag, password: source.local.icePwd, restarted: restarted)
    }
}
