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
        let plan = try MediaPlan(analysis: analysis, media: media, callId: request.callId,
                                 ntpReference: NTPClockReference(mediaTime: time, ntp: NTPTimestamp(date: wallClock.date(at: time))))
        let participant = try makeParticipant(request, analysis: analysis, plan: plan, dtls: media.dtls, now: time)
        return step(at: time, &output) {
            participants[request.callId] = participant
            joinOrder.append(request.callId)
            _ = mixer.addParticipant(request.callId, ssrc: analysis.audio.ssrc)
            self.output.routing.append(.register(ufrag: participant.ufrag, callId: request.callId))
            var fields: [String: EventField] = [
                "callId": .string(request.callId.rawValue), "userId": .string(request.userId.rawValue),
            ]
            if let name = request.displayName { fields["displayName"] = .string(name) }
            emit("participant.joined", fields)
            return JoinAnswer(sdp: plan.answer, snapshot: participant.snapshot())
        }
    }

    private func makeParticipant(_ request: JoinRequest, analysis: OfferAnalysis, plan: MediaPlan, dtls: DTLSContext,
                                 now: MediaTime)
        throws(JoinError) -> Participant
    {
        let transport: PeerTransport
        do {
            transport = try PeerTransport(configuration: plan.transport, dtlsContext: dtls, now: now)
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
            video: ParticipantVideo(analysis: analysis, slotStreams: plan.slotStreams))
    }
}

/// Everything a join derives from the offer: the transport's configuration and the answer.
struct MediaPlan {
    let transport: PeerTransportConfiguration
    let answer: String
    /// The server's stream on each video slot, in `analysis.slots` order.
    let slotStreams: [OutgoingStream]

    init(analysis: OfferAnalysis, media: RoomCore.Media, callId: CallID, ntpReference: NTPClockReference)
        throws(JoinError)
    {
        let localICE = ICECredentials.random()
        let remoteICE: ICECredentials
        do {
            remoteICE = try ICECredentials(ufrag: analysis.iceUfrag, password: analysis.icePwd)
        } catch {
            throw .offerRejected(code: "invalidIceCredentials", message: "the offer's ICE ufrag or password is invalid")
        }
        let fingerprints = analysis.supportedFingerprints.compactMap { fingerprint in
            DTLSFingerprint.Algorithm(rawValue: fingerprint.hashFunction)
                .map { DTLSFingerprint(algorithm: $0, digest: fingerprint.digest) }
        }
        guard !fingerprints.isEmpty else {
            throw .offerRejected(code: "unsupportedFingerprint", message: "no fingerprint with a supported hash")
        }
        let role: DTLSRole = analysis.localSetup == .active ? .client : .server
        var ssrcs = Set<UInt32>()
        func newSSRC() -> SSRC {
            while true {
                let value = UInt32.random(in: 1...UInt32.max)
                if ssrcs.insert(value).inserted { return SSRC(value) }
            }
        }
        let cname = "chorus-" + String(callId.rawValue.prefix(8))
        let audio = OutgoingStream(ssrc: newSSRC(), streamID: "chorus", trackID: "mix")
        let slots = analysis.slots.enumerated().map { index, slot in
            OutgoingStream(ssrc: newSSRC(), rtxSSRC: slot.codec.rtxPayloadType == nil ? nil : newSSRC(),
                           streamID: "chorus-slot\(index)", trackID: "slot\(index)")
        }
        slotStreams = slots
        var clockRates: [UInt8: UInt64] = [analysis.audio.opusPayloadType.rawValue: 48_000]
        if let camera = analysis.camera {
            clockRates[camera.codec.payloadType.rawValue] = UInt64(camera.codec.clockRate)
            if let rtx = camera.codec.rtxPayloadType { clockRates[rtx.rawValue] = UInt64(camera.codec.clockRate) }
        }
        transport = PeerTransportConfiguration(
            localICE: localICE, remoteICE: remoteICE, dtlsRole: role, remoteFingerprints: fingerprints,
            rtcpSSRC: audio.ssrc, cname: cname, clockRates: clockRates,
            ntpReference: ntpReference)
        let local = LocalParameters(
            sessionID: UInt64.random(in: 1...UInt64(Int64.max)), iceUfrag: localICE.ufrag, icePwd: localICE.password,
            fingerprint: CertificateFingerprint(hashFunction: "sha-256", digest: media.dtls.certificate.fingerprint),
            candidateAddress: media.candidateAddress, candidatePort: media.candidatePort, cname: cname,
            audioStream: audio, slotStreams: slots)
        do {
            answer = try AnswerBuilder(analysis: analysis, local: local).buildText()
        } catch {
            throw .internalFailure("answer: \(error)")
        }
    }
}
