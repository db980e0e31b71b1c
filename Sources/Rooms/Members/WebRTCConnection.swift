import AudioMixer
import ChorusCore
import CongestionControl
import ICELite
import PeerTransport
import RTCP
import SDP
import VideoForwarder

/// A WebRTC peer as a room member's connection: its `PeerTransport` (ICE-lite, DTLS-SRTP,
/// RTCP reports, transport-cc) behind the member seam, with what only this kind has: the ICE
/// ufrag its STUN is routed by (new after each ICE restart) and the answer it was given (to
/// answer a re-offer with the same media).
///
/// A class confined to the room's queue, like the transport it owns.
public final class WebRTCConnection: MemberConnection {
    public let transport: PeerTransport
    /// Our current ICE ufrag, by which its STUN is routed.
    public internal(set) var ufrag: String
    /// What its answer was built from, to answer an ICE restart.
    var answer: AnswerSource

    init(transport: PeerTransport, answer: AnswerSource) {
        self.transport = transport
        self.answer = answer
        ufrag = answer.local.iceUfrag
    }

    /// The SSRCs the peer declared for what it sends (microphone, camera, its RTX), by which
    /// its packets from a new address find it (NAT rebinding).
    var declaredSources: [SSRC] {
        let analysis = answer.analysis
        return [analysis.audio.ssrc, analysis.camera?.primarySSRC, analysis.camera?.rtxSSRC].compactMap { $0 }
    }

    public var rtcpSSRC: SSRC { transport.configuration.rtcpSSRC }
    public var counters: TransportCounters { transport.counters }
    public var nextDeadline: MediaTime { transport.nextDeadline }

    public func routes(joining: Bool, callId: CallID) -> [RoutingChange] {
        let sources = declaredSources
        if joining {
            return [.register(ufrag: ufrag, callId: callId)] + (sources.isEmpty ? [] : [.registerSSRCs(sources, callId: callId)])
        }
        return [.unregister(ufrag: ufrag, callId: callId)] + (sources.isEmpty ? [] : [.unregisterSSRCs(sources)])
    }

    public func receive(_ datagram: [UInt8], from source: TransportAddress, now: MediaTime, transmits: inout [Transmit])
        -> Result<MemberSignal?, TransportDropReason>
    {
        transport.receive(datagram, from: source, now: now, transmits: &transmits).map { $0.map(Self.signal) }
    }

    public func poll(now: MediaTime, transmits: inout [Transmit]) -> MemberSignal? {
        transport.poll(now: now, transmits: &transmits).map(Self.signal)
    }

    /// The transport's events in the member seam's words.
    static func signal(_ event: TransportEvent) -> MemberSignal {
        switch event {
        case .rtp(let packet): .rtp(packet)
        case .rtcp(let compound): .rtcp(compound)
        case .addressValidated(let address), .nominated(let address), .probing(let address): .route(address)
        case .pathChanged(let old, let new): .pathChanged(from: old, to: new)
        case .connected(let profile): .connected(security: profile.openSSLName)
        case .failed(let reason): .failed(reason)
        case .closed: .closed
        case .consentExpired: .consentExpired
        }
    }

    @discardableResult
    public func sendRTP(_ packet: [UInt8], reporting: ReportedPacket?, probeClusterID: Int?, now: MediaTime,
                        transmits: inout [Transmit]) -> Bool {
        transport.sendRTP(packet, reporting: reporting, probeClusterID: probeClusterID, now: now, transmits: &transmits)
    }

    @discardableResult
    public func sendRTCP(_ compound: [UInt8], transmits: inout [Transmit]) -> Bool {
        transport.sendRTCP(compound, transmits: &transmits)
    }

    public func close(sources: [SSRC], now: MediaTime, transmits: inout [Transmit]) {
        transport.close(sources: sources, now: now, transmits: &transmits)
    }

    public func receivedSenderReport(_ report: SenderReport) { transport.receivedSenderReport(report) }
    public func receivedReportBlock(_ block: ReportBlock, now: MediaTime) { transport.receivedReportBlock(block, now: now) }
    public func receivedTransportFeedback(_ feedback: TransportFeedback, now: MediaTime) {
        transport.receivedTransportFeedback(feedback, now: now)
    }

    public var bandwidthEstimate: BandwidthEstimate? { transport.bandwidthEstimate }
    public var roundTripNanoseconds: UInt64? { transport.roundTripNanoseconds }
    public func probeRequest(now: MediaTime) -> ProbeCluster? { transport.probeRequest(now: now) }
    public func requestProbe(bitrate: Int, probeFurther: Bool, now: MediaTime) {
        transport.requestProbe(bitrate: bitrate, probeFurther: probeFurther, now: now)
    }
}

extension MemberMedia {
    /// A WebRTC peer's contract, from its accepted offer and the plan made for it: Opus both
    /// ways on the offer's payload type (with the levels it negotiated), its camera, and its
    /// slots on the streams the plan drew.
    init(webRTC analysis: OfferAnalysis, plan: MediaPlan) {
        let audio = analysis.audio
        let opus = AudioFormat.opus(payloadType: audio.opusPayloadType.rawValue)
        let csrcLevels = audio.extensions.csrcAudioLevel.flatMap { $0 <= 14 ? UInt8($0) : nil }
        let slots = zip(analysis.slots, plan.slotStreams).compactMap { section, stream -> Slot? in
            guard let codec = VideoCodec(section.codec.name) else { return nil }
            let rtx = stream.rtxSSRC.flatMap { ssrc in section.codec.rtxPayloadType.map { (ssrc, $0) } }
            return Slot(mid: section.mid, codec: codec, payloadType: section.codec.payloadType, ssrc: stream.ssrc, rtx: rtx)
        }
        self.init(audioIn: AudioIn(format: opus, ssrc: audio.ssrc, levelExtensionID: audio.extensions.ssrcAudioLevel),
                  audioOut: AudioOut(format: opus, ssrc: plan.transport.rtcpSSRC, csrcLevelExtensionID: csrcLevels),
                  sendsAudio: audio.offerDirection == .sendrecv || audio.offerDirection == .sendonly,
                  camera: analysis.camera.flatMap(Camera.init(webRTC:)), slots: slots)
    }
}

extension MemberMedia.Camera {
    init?(webRTC camera: CameraSection) {
        guard let codec = VideoCodec(camera.codec.name) else { return nil }
        self.init(codec: codec, payloadType: camera.codec.payloadType.rawValue,
                  rtxPayloadType: camera.codec.rtxPayloadType?.rawValue, clockRate: camera.codec.clockRate,
                  ssrc: camera.isSimulcast ? nil : camera.primarySSRC, rtxSSRC: camera.isSimulcast ? nil : camera.rtxSSRC,
                  simulcastRIDs: camera.isSimulcast ? camera.simulcastLayers.map(\.rid) : [],
                  rtpStreamIDExtension: camera.rtpStreamIDExtension.flatMap(UInt8.init(exactly:)),
                  repairedRTPStreamIDExtension: camera.repairedRTPStreamIDExtension.flatMap(UInt8.init(exactly:)))
    }
}

extension VideoCodec {
    init?(_ name: VideoCodecName) {
        switch name {
        case .vp8: self = .vp8
        case .h264: self = .h264
        }
    }
}
