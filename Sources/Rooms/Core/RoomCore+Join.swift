import AudioMixer
import ChorusCore
import DTLS
import Foundation
import ICELite
import PeerTransport
import RTCP
import SDP

/// The answer to a join.
public struct JoinAnswer: Sendable {
    public let sdp: String
    public let snapshot: ParticipantSnapshot
}

/// A member of any kind joining a room: who it is, its connection (made by the edge that
/// accepted it: the SIP service for a phone, a test for a test member) and its contract.
public struct MemberJoin {
    public let callId: CallID
    public let userId: UserID
    public let displayName: String?
    public let headers: [String: String]
    public let connection: any MemberConnection
    public let media: MemberMedia

    public init(callId: CallID, userId: UserID, displayName: String?, headers: [String: String] = [:],
                connection: any MemberConnection, media: MemberMedia) {
        self.callId = callId
        self.userId = userId
        self.displayName = displayName
        self.headers = headers
        self.connection = connection
        self.media = media
    }
}

extension RoomCore {
    /// Admits a WebRTC peer at `now`: checks the offer's shape against the room (its video
    /// slots), creates its transport, and answers; then it joins like any member (`admit`). The
    /// call is `progressing` until ICE and DTLS complete.
    public func join(_ request: JoinRequest, now: MediaTime, into output: inout RoomOutput)
        throws(JoinError) -> JoinAnswer
    {
        guard !isClosed else { throw .roomClosed }
        guard let media else { throw .internalFailure("this room has no media environment") }
        guard members[request.callId] == nil else { throw .duplicateCall }
        guard members.count < settings.maxParticipants else { throw .roomFull }
        let analysis: OfferAnalysis
        do {
            analysis = try OfferAnalysis(offer: try SessionDescription(parsing: request.offer),
                                         videoSlots: settings.videoSlots)
        } catch {
            throw .offerRejected(code: error.code, message: error.message)
        }
        let plan = try MediaPlan(
            analysis: analysis, certificateFingerprint: media.dtls.certificate.fingerprint,
            candidateAddress: media.candidateAddress, candidatePort: media.candidatePort,
            candidateTCPPort: media.candidateTCPPort, additionalCandidateAddresses: media.additionalCandidateAddresses,
            callId: request.callId,
            ntpReference: NTPClockReference(mediaTime: now, ntp: NTPTimestamp(date: wallClock.date(at: now))))
        var configuration = plan.transport
        configuration.consentTimeoutNanoseconds = media.consentTimeoutNanoseconds
        let transport: PeerTransport
        do {
            transport = try PeerTransport(configuration: configuration, dtlsContext: media.dtls, now: now)
        } catch {
            throw .internalFailure("DTLS setup: \(error)")
        }
        let connection = WebRTCConnection(transport: transport, answer: plan.answerSource)
        let snapshot = try admit(
            MemberJoin(callId: request.callId, userId: request.userId, displayName: request.displayName,
                       headers: request.headers, connection: connection, media: MemberMedia(webRTC: analysis, plan: plan)),
            now: now, into: &output)
        return JoinAnswer(sdp: plan.answer, snapshot: snapshot)
    }

    /// Admits a member of any kind at `now`: into the member table and every stage its
    /// contract concerns, its routes to the media port, and `participant.joined`.
    @discardableResult
    public func admit(_ join: MemberJoin, now: MediaTime, into output: inout RoomOutput) throws(JoinError)
        -> ParticipantSnapshot
    {
        guard !isClosed else { throw .roomClosed }
        guard members[join.callId] == nil else { throw .duplicateCall }
        guard members.count < settings.maxParticipants else { throw .roomFull }
        let callId = join.callId, media = join.media, connection = join.connection
        let handle: AudioStage.Handle
        do {
            handle = try audio.add(callId, userId: join.userId, media: media, connection: connection)
        } catch {
            throw .internalFailure("audio decoder: \(error)")
        }
        let member = Member(callId: callId, userId: join.userId, displayName: join.displayName,
                            joinedAt: wallClock.date(at: now), connection: connection, media: media, audio: handle)
        members[callId] = member
        joinOrder.append(member)
        video.add(callId, userId: join.userId, media: media, connection: connection)
        bandwidth.add(callId, connection: connection, hasVideo: media.hasVideo, probeable: video.canProbe(callId))
        quality.add(callId, userId: join.userId)
        for route in connection.routes(joining: true, callId: callId) {
            if case .bind(let address, _) = route { member.boundAddresses.insert(address) }
            output.routing.append(route)
        }
        output.emit(.participantJoined(member.eventMember, displayName: join.displayName, headers: join.headers), at: now)
        return snapshot(member)
    }
}
