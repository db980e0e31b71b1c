import ChorusCore

/// The per-section half of the answer: the audio section (Opus only) and the video sections
/// (one codec, its RTX, the feedback Chorus implements, and on a simulcast camera the mirrored
/// RIDs), each echoing the offer's header extension IDs with mirrored directions and announcing
/// the streams the server sends.
extension AnswerBuilder {
    /// RTCP feedback the server acts on for video: NACK (RFC 4585), PLI, FIR (RFC 5104) and
    /// REMB; and transport-cc when negotiated (`OfferAnalysis.transportWideCCExtensionID`):
    /// the server then reports every arrival, and the browser's send-side estimator drives
    /// its encoders, capped by the REMB the server passes on.
    public static let videoFeedback: [RTCPFeedback] = [
        .nack, .pictureLossIndication, .fullIntraRequest, .receiverEstimatedMaximumBitrate,
    ]
    /// RTCP feedback for audio: none but transport-cc (the mix is sent at a fixed bitrate; loss
    /// comes from RRs).
    public static let audioFeedback: [RTCPFeedback] = []

    /// The feedback answered for a section: `supported`, plus transport-cc when negotiated.
    func feedback(_ supported: [RTCPFeedback]) -> [RTCPFeedback] {
        analysis.transportWideCCExtensionID == nil ? supported : supported + [.transportCC]
    }

    /// Whether the answer maps `map`: every supported extension but the transport-wide
    /// sequence number, which only a transport-cc negotiation keeps.
    func answers(_ map: ExtensionMap) -> Bool {
        map.uri != ExtensionMap.URI.transportWideCC || map.id == analysis.transportWideCCExtensionID
    }

    func audioSection(_ audio: AudioSection, proto: String) -> MediaDescription {
        let pt = audio.opusPayloadType
        let sends = audio.answerDirection.sends
        var attributes = transportAttributes(inMediaSection: true)
        attributes += commonAttributes(mid: audio.mid, extensions: audio.extensions,
                                       extmapAllowMixed: audio.extmapAllowMixed, direction: audio.answerDirection,
                                       stream: sends ? local.audioStream : nil, rtcpReducedSize: audio.rtcpReducedSize)
        attributes.append(.rtpMap(RTPMap(payloadType: pt, encodingName: "opus", clockRate: 48_000,
                                         encodingParameters: "2")))
        attributes += Self.acceptedFeedback(audio.feedback, supported: feedback(Self.audioFeedback), payloadType: pt)
        attributes.append(.formatParameters(FormatParameters(payloadType: pt, parameters: Self.opusParameters)))
        if sends { attributes += ssrcAttributes(local.audioStream, rtx: nil) }
        return MediaDescription(media: "audio", port: local.candidatePort, proto: proto,
                                formats: [String(pt.rawValue)], connection: connection, attributes: attributes)
    }

    /// `stream` is the slot stream the server sends here, nil for a receive-only camera section.
    func videoSection(_ video: VideoSection, stream: OutgoingStream?, proto: String)
        -> MediaDescription
    {
        let codec = video.codec
        let sending = video.answerDirection.sends ? stream : nil
        var attributes = transportAttributes(inMediaSection: true)
        attributes += commonAttributes(mid: video.mid, extensions: video.extensions,
                                       extmapAllowMixed: video.extmapAllowMixed, direction: video.answerDirection,
                                       stream: sending, rtcpReducedSize: video.rtcpReducedSize)
        attributes.append(.rtpMap(RTPMap(payloadType: codec.payloadType, encodingName: codec.name.rawValue,
                                         clockRate: codec.clockRate)))
        attributes += Self.acceptedFeedback(codec.feedback, supported: feedback(Self.videoFeedback),
                                            payloadType: codec.payloadType)
        if let parameters = Self.answerParameters(for: codec) {
            attributes.append(.formatParameters(FormatParameters(payloadType: codec.payloadType,
                                                                 parameters: parameters)))
        }
        var formats = [String(codec.payloadType.rawValue)]
        if let rtx = codec.rtxPayloadType {
            formats.append(String(rtx.rawValue))
            attributes.append(.rtpMap(RTPMap(payloadType: rtx, encodingName: "rtx", clockRate: codec.clockRate)))
            attributes.append(.formatParameters(FormatParameters(payloadType: rtx,
                                                                 parameters: "apt=\(codec.payloadType.rawValue)")))
        }
        attributes += simulcastAttributes(for: video)
        if let sending {
            attributes += ssrcAttributes(sending, rtx: codec.rtxPayloadType == nil ? nil : sending.rtxSSRC)
        }
        return MediaDescription(media: "video", port: local.candidatePort, proto: proto, formats: formats,
                                connection: connection, attributes: attributes)
    }

    /// On the camera section with simulcast, the offer mirrored (RFC 8853 §5.3.2): one
    /// `a=rid:<id> recv` per negotiated layer, without restrictions, and `a=simulcast:recv` with
    /// the layers in the offer's order, paused ones still marked `~`, alternatives dropped.
    private func simulcastAttributes(for video: VideoSection) -> [Attribute] {
        guard let camera = analysis.camera, camera.video.mLineIndex == video.mLineIndex, camera.isSimulcast
        else { return [] }
        var attributes: [Attribute] = camera.simulcastLayers.map { .rid(RID(id: $0.rid, direction: .recv)) }
        let streams = camera.simulcastLayers.map { [Simulcast.Alternative(rid: $0.rid, paused: $0.paused)] }
        attributes.append(.simulcast(Simulcast(receive: streams)))
        return attributes
    }

    /// mid, header extensions, direction, msid and RTCP multiplexing, in browser order.
    private func commonAttributes(mid: String, extensions: HeaderExtensions, extmapAllowMixed: Bool,
                                  direction: Direction, stream: OutgoingStream?, rtcpReducedSize: Bool) -> [Attribute] {
        var attributes: [Attribute] = [.mid(mid)]
        for map in extensions.maps where answers(map) {
            // RFC 8285 §6: the answer keeps the ID and mirrors a declared direction.
            attributes.append(.extensionMap(ExtensionMap(id: map.id, direction: map.direction?.reversed, uri: map.uri)))
        }
        if extmapAllowMixed { attributes.append(.extmapAllowMixed) }
        attributes.append(.direction(direction))
        if let stream { attributes.append(.msid(MediaStreamID(streamID: stream.streamID, trackID: stream.trackID))) }
        attributes.append(.rtcpMux)
        if rtcpReducedSize { attributes.append(.rtcpReducedSize) }
        return attributes
    }

    /// The offered feedback lines Chorus implements, once each, in offer order.
    static func acceptedFeedback(_ offered: [RTCPFeedback], supported: [RTCPFeedback],
                                 payloadType: PayloadType) -> [Attribute] {
        var accepted: [RTCPFeedback] = []
        for entry in offered where supported.contains(where: entry.isSameMessage) {
            if !accepted.contains(where: entry.isSameMessage) { accepted.append(entry) }
        }
        return accepted.map { .rtcpFeedback($0.with(payloadType: payloadType)) }
    }

    /// VP8 needs no parameters. H.264 keeps the offered profile-level-id (the receiver's decoder
    /// capability), states packetization-mode=1, and keeps level-asymmetry-allowed=1 when
    /// offered, so senders in one room may use different levels (RFC 6184 §8.1).
    static func answerParameters(for codec: NegotiatedVideoCodec) -> String? {
        guard codec.name == .h264 else { return nil }
        var parameters: [String] = []
        if codec.formatParameters?.parameter("level-asymmetry-allowed") == "1" {
            parameters.append("level-asymmetry-allowed=1")
        }
        parameters.append("packetization-mode=1")
        if let profile = codec.formatParameters?.parameter("profile-level-id"),
           profile.utf8.count == 6, profile.utf8.allSatisfy({ SDPSyntax.hexValue($0) != nil }) {
            parameters.append("profile-level-id=" + profile)
        }
        return parameters.joined(separator: ";")
    }

    /// `a=ssrc-group:FID` (with RTX) and one `a=ssrc … cname:` line per SSRC (RFC 5576).
    private func ssrcAttributes(_ stream: OutgoingStream, rtx: SSRC?) -> [Attribute] {
        var attributes: [Attribute] = []
        var ssrcs = [stream.ssrc]
        if let rtx {
            ssrcs.append(rtx)
            attributes.append(.ssrcGroup(SSRCGroup(semantics: SSRCGroup.flowIdentification, ssrcs: ssrcs)))
        }
        for ssrc in ssrcs {
            attributes.append(.ssrc(SSRCAttribute(ssrc: ssrc, attribute: "cname", attributeValue: local.cname)))
        }
        return attributes
    }
}
