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

extension RoomCore {
    /// Admits a participant at `now`: checks the offer's shape against the room (its video
    /// slots), creates its transport, asks for its ufrag to be routed to it, and answers. The
    /// call is `progressing` until ICE and DTLS complete.
    public func join(_ request: JoinRequest, now time: MediaTime, into output: inout RoomOutput)
        throws(JoinError) -> JoinAnswer
    {
        guard !isClosed else { throw .roomClosed }
        guard let media else { throw .internalFailure("this room has no media environment") }
        guard participants[request.callId] == nil else { throw .duplicateCall }
        guard participants.count < settings.maxParticipants else { throw .roomFull }
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
            ntpReference: NTPClockReference(mediaTime: time, ntp: NTPTimestamp(date: wallClock.date(at: time))))
        let participant = try makeParticipant(request, analysis: analysis, plan: plan, media: media, now: time)
        return step(at: time, &output) {
            participants[request.callId] = participant
            joinOrder.append(request.callId)
            members.append(participant)
            if participant.video.publisher != nil || !participant.video.slots.isEmpty {
                videoMembers.append(participant)
            }
            let handle = mixer.addParticipant(request.callId, ssrc: analysis.audio.ssrc)
            participant.mixerHandle = handle
            while membersBySlot.count <= handle.slot { membersBySlot.append(nil) }
            membersBySlot[handle.slot] = participant
            self.output.routing.append(.register(ufrag: participant.ufrag, callId: request.callId))
            if !participant.receivedSources.isEmpty {
                self.output.routing.append(.registerSSRCs(participant.receivedSources, callId: request.callId))
            }
            var fields: [String: EventField] = [
                "callId": .string(request.callId.rawValue), "userId": .string(request.userId.rawValue),
            ]
            if let name = request.displayName { fields["displayName"] = .string(name) }
            if !request.headers.isEmpty { fields["headers"] = .object(request.headers.mapValues { .string($0) }) }
            emit(.participantJoined, fields)
            return JoinAnswer(sdp: plan.answer, snapshot: snapshot(participant))
        }
    }

    private func makeParticipant(_ request: JoinRequest, analysis: OfferAnalysis, plan: MediaPlan, media: Media,
                                 now: MediaTime)
        throws(JoinError) -> Participant
    {
        let transport: PeerTransport
        var configuration = plan.transport
        configuration.consentTimeoutNanoseconds = media.consentTimeoutNanoseconds
        do {
            transport = try PeerTransport(configuration: configuration, dtlsContext: media.dtls, now: now)
        } catch {
            throw .internalFailure("DTLS setup: \(error)")
        }
        let decoder: OpusDecoder
        do {
            decoder = try OpusDecoder()
        } catch {
            throw .internalFailure("Opus decoder: \(error)")
        }
        let audio = ParticipantAudio(
            payloadType: analysis.audio.opusPayloadType.rawValue, levelExtensionID: analysis.audio.extensions.ssrcAudioLevel,
            csrcLevelExtensionID: analysis.audio.extensions.csrcAudioLevel, ssrc: plan.transport.rtcpSSRC, decoder: decoder)
        return Participant(
            callId: request.callId, userId: request.userId, displayName: request.displayName,
            joinedAt: wallClock.date(at: now), transport: transport, ufrag: plan.transport.localICE.ufrag, audio: audio,
            video: ParticipantVideo(analysis: analysis, slotStreams: plan.slotStreams), answer: plan.answerSource)
    }
}
