import ChorusCore
import DTLS
import ICELite
import PeerTransport
import RTCP
import SDP

/// Everything a join derives from an accepted offer: the transport's configuration (ICE
/// credentials, DTLS role and the peer's fingerprints, SSRCs, clock rates) and the answer. A
/// pure value: the join uses it with fresh credentials and the system generator, the SDP fuzz
/// harness with fixed ones, so both run the same code.
public struct MediaPlan {
    public let transport: PeerTransportConfiguration
    public let answer: String
    /// What the answer was built from: kept by the participant to answer an ICE restart with
    /// the same media and new credentials.
    public let answerSource: AnswerSource
    /// The server's stream on each video slot, in `analysis.slots` order.
    public let slotStreams: [OutgoingStream]

    /// `localICE` defaults to fresh credentials from OpenSSL's DRBG; SSRCs and the session ID
    /// come from a generator seeded with `seed`.
    public init(
        analysis: OfferAnalysis, certificateFingerprint: [UInt8], candidateAddress: String, candidatePort: UInt16,
        candidateTCPPort: UInt16? = nil, additionalCandidateAddresses: [String] = [], callId: CallID, ntpReference: NTPClockReference, localICE: ICECredentials = .random(),
        seed: UInt64 = .random(in: 0...UInt64.max)
    ) throws(JoinError) {
        // SSRCs and the session ID need to be distinct, not secret: a seeded generator makes a
        // plan reproducible (the fuzz harness), and a concrete one keeps ThreadSanitizer's
        // instrumentation working (an inout generic generator crashed it, `make tsan`).
        var generator = SplitMix64(seed: seed)
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
        // Every SSRC the answer needs, distinct, drawn first.
        let needed = 1 + analysis.slots.reduce(0) { $0 + ($1.codec.rtxPayloadType == nil ? 1 : 2) }
        var drawn = Set<UInt32>()
        var fresh: [SSRC] = []
        while fresh.count < needed {
            let value = UInt32.random(in: 1...UInt32.max, using: &generator)
            if drawn.insert(value).inserted { fresh.append(SSRC(value)) }
        }
        let cname = "chorus-" + String(callId.rawValue.prefix(8))
        let audio = OutgoingStream(ssrc: fresh[0], streamID: "chorus", trackID: "mix")
        var slots: [OutgoingStream] = []
        var next = 1
        for (index, slot) in analysis.slots.enumerated() {
            let ssrc = fresh[next]
            let rtx = slot.codec.rtxPayloadType == nil ? nil : fresh[next + 1]
            next += rtx == nil ? 1 : 2
            slots.append(OutgoingStream(ssrc: ssrc, rtxSSRC: rtx, streamID: "chorus-slot\(index)",
                                        trackID: "slot\(index)"))
        }
        slotStreams = slots
        var transport = PeerTransportConfiguration(
            localICE: localICE, remoteICE: remoteICE, dtlsRole: role, remoteFingerprints: fingerprints,
            rtcpSSRC: audio.ssrc, cname: cname, clockRates: Self.clockRates(analysis), ntpReference: ntpReference)
        transport.transportWideSequenceExtensionID = analysis.transportWideCCExtensionID.flatMap(UInt8.init(exactly:))
        if let id = analysis.slotAbsoluteSendTimeExtensionID.flatMap(UInt8.init(exactly:)) {
            transport.absoluteSendTime = (id, analysis.slotPayloadTypes)
        }
        // The mix, and each slot's top layer (720p at browsers' 2.5 Mbit/s).
        transport.maximumSendBitrate = 200_000 + 2_500_000 * analysis.slots.count
        self.transport = transport
        var local = LocalParameters(
            sessionID: UInt64.random(in: 1...UInt64(Int64.max), using: &generator), iceUfrag: localICE.ufrag,
            icePwd: localICE.password,
            fingerprint: CertificateFingerprint(hashFunction: "sha-256", digest: certificateFingerprint),
            candidateAddress: candidateAddress, candidatePort: candidatePort, cname: cname,
            audioStream: audio, slotStreams: slots)
        local.candidateTCPPort = candidateTCPPort
        local.additionalCandidateAddresses = additionalCandidateAddresses
        answerSource = AnswerSource(analysis: analysis, local: local)
        do {
            answer = try AnswerBuilder(analysis: analysis, local: local).buildText()
        } catch {
            throw .internalFailure("answer: \(error)")
        }
    }

    /// RTP clock rate of each payload type the peer sends: 48 kHz Opus, the camera's (and its
    /// RTX's) rate.
    static func clockRates(_ analysis: OfferAnalysis) -> [UInt8: UInt64] {
        var clockRates: [UInt8: UInt64] = [analysis.audio.opusPayloadType.rawValue: 48_000]
        if let camera = analysis.camera {
            clockRates[camera.codec.payloadType.rawValue] = UInt64(camera.codec.clockRate)
            if let rtx = camera.codec.rtxPayloadType { clockRates[rtx.rawValue] = UInt64(camera.codec.clockRate) }
        }
        return clockRates
    }
}

/// The offer's analysis and the server's parameters an answer is built from.
public struct AnswerSource: Sendable {
    public let analysis: OfferAnalysis
    public var local: LocalParameters
}
