import ChorusCore

/// The media half of the offer check: Opus on the audio section (RFC 7587), VP8 or H.264
/// packetization-mode 1 on each video section (RFC 7741, RFC 6184) with its RTX (RFC 4588),
/// the header extensions Chorus uses (RFC 8285), the streams the offerer announced, and the
/// camera's simulcast (`OfferAnalysis+Simulcast.swift`).
extension OfferAnalysis {
    static func negotiateMedia(offer: SessionDescription, plans: [SectionPlan]) throws(SDPOfferError)
        -> (AudioSection, CameraSection?, [VideoSection])
    {
        var audio: AudioSection?
        var camera: CameraSection?
        var slots: [VideoSection] = []
        for plan in plans {
            let section = offer.media[plan.mLineIndex]
            let direction = offer.direction(of: section)
            let mid = plan.mid ?? "#\(plan.mLineIndex)"
            switch plan.role {
            case .audio:
                audio = try negotiateAudio(section, mLineIndex: plan.mLineIndex, mid: mid, direction: direction)
            case .camera, .cameraAndSlot, .slot:
                var video = try negotiateVideo(section, mLineIndex: plan.mLineIndex, mid: mid, direction: direction)
                if plan.role != .slot {
                    let layers = try negotiateSimulcast(section, video: video)
                    if !layers.isEmpty {
                        // The RID extensions are answered on this section only, and only with
                        // simulcast; a sendrecv section's slot answer is the same section.
                        video.extensions = HeaderExtensions(
                            offered: section.extensionMaps,
                            supported: HeaderExtensions.videoURIs + HeaderExtensions.simulcastURIs)
                    }
                    camera = cameraSection(video, section, simulcastLayers: layers)
                }
                if plan.role != .camera { slots.append(video) }
            case .rejected:
                continue
            }
        }
        // checkShape guarantees one audio plan; this keeps the contract without a trap.
        guard let audio else { throw .noAudio }
        return (audio, camera, slots)
    }

    static func negotiateAudio(_ section: MediaDescription, mLineIndex: Int, mid: String, direction: Direction)
        throws(SDPOfferError) -> AudioSection
    {
        let index = PayloadTypeIndex(section)
        guard let opus = section.payloadTypes.first(where: { index.rtpMap($0).map(isOpus) ?? false }) else {
            throw .noOpus
        }
        let parameters = index.formatParameters(opus)
        return AudioSection(
            mLineIndex: mLineIndex, mid: mid, offerDirection: direction, opusPayloadType: opus,
            opusParameters: parameters, useInbandFEC: parameters?.parameter("useinbandfec") == "1",
            feedback: index.feedback(for: opus),
            extensions: HeaderExtensions(offered: section.extensionMaps, supported: HeaderExtensions.audioURIs),
            ssrc: direction.sends ? section.ssrcs.first : nil,
            rtcpReducedSize: section.hasRTCPReducedSize, extmapAllowMixed: section.hasExtmapAllowMixed)
    }

    /// RFC 7587 §7: `opus/48000/2` always, whatever the channel count. A missing channel
    /// count is tolerated; anything else is not Opus as WebRTC negotiates it.
    static func isOpus(_ map: RTPMap) -> Bool {
        map.isEncoding("opus") && map.clockRate == 48_000
            && (map.encodingParameters == nil || map.encodingParameters == "2")
    }

    static func negotiateVideo(_ section: MediaDescription, mLineIndex: Int, mid: String, direction: Direction)
        throws(SDPOfferError) -> VideoSection
    {
        let index = PayloadTypeIndex(section)
        guard let codec = chooseVideoCodec(section, index: index) else { throw .noVideoCodec(mid: mid) }
        return VideoSection(
            mLineIndex: mLineIndex, mid: mid, offerDirection: direction, codec: codec,
            extensions: HeaderExtensions(offered: section.extensionMaps, supported: HeaderExtensions.videoURIs),
            rtcpReducedSize: section.hasRTCPReducedSize, extmapAllowMixed: section.hasExtmapAllowMixed)
    }

    /// VP8 if offered; else the first H.264 with `packetization-mode=1` (mode 0, the default
    /// without fmtp, cannot carry fragmented frames). Only formats on the m= line count.
    static func chooseVideoCodec(_ section: MediaDescription, index: PayloadTypeIndex) -> NegotiatedVideoCodec? {
        var h264: PayloadType?
        for pt in section.payloadTypes {
            guard let map = index.rtpMap(pt), map.clockRate == 90_000 else { continue }
            if map.isEncoding(VideoCodecName.vp8.rawValue) {
                return negotiatedCodec(.vp8, pt, section: section, index: index)
            }
            if h264 == nil, map.isEncoding(VideoCodecName.h264.rawValue),
               index.formatParameters(pt)?.parameter("packetization-mode") == "1" {
                h264 = pt
            }
        }
        return h264.map { negotiatedCodec(.h264, $0, section: section, index: index) }
    }

    private static func negotiatedCodec(_ name: VideoCodecName, _ pt: PayloadType, section: MediaDescription,
                                        index: PayloadTypeIndex) -> NegotiatedVideoCodec {
        let listed = Set(section.payloadTypes)
        let rtx = index.retransmissionTypes(for: pt).first { candidate in
            guard listed.contains(candidate), let map = index.rtpMap(candidate) else { return false }
            return map.isEncoding("rtx") && map.clockRate == 90_000
        }
        return NegotiatedVideoCodec(name: name, payloadType: pt, clockRate: 90_000,
                                    formatParameters: index.formatParameters(pt), rtxPayloadType: rtx,
                                    feedback: index.feedback(for: pt))
    }

    /// The camera's announced streams: the FID group (media + RTX) when present, else the
    /// first `a=ssrc`; with simulcast RIDs and no `a=ssrc`, the SSRCs are learned from packets.
    static func cameraSection(_ video: VideoSection, _ section: MediaDescription,
                              simulcastLayers: [SimulcastLayer]) -> CameraSection {
        let groups = section.ssrcGroups
        let ssrcs = section.ssrcs
        let fid = groups.first { $0.semantics == SSRCGroup.flowIdentification && $0.ssrcs.count >= 2 }
        let primary = fid?.ssrcs.first ?? ssrcs.first
        let rtx = fid.flatMap { $0.ssrcs.count >= 2 ? $0.ssrcs[1] : nil }
        return CameraSection(video: video, ssrcs: ssrcs, ssrcGroups: groups, primarySSRC: primary, rtxSSRC: rtx,
                             rids: section.rids, simulcast: section.simulcast, simulcastLayers: simulcastLayers)
    }
}

extension OfferAnalysis {
    /// The transport-wide sequence number extension's ID when transport-wide congestion control
    /// is negotiated, else nil. It is when the offer asks for `transport-cc` feedback on some
    /// codec Chorus answers and every accepted section that maps the extension maps it to the
    /// same ID: the numbers are counted across the whole bundled transport, so the receiver
    /// must find them under one ID whatever section a packet belongs to (browsers use one).
    public var transportWideCCExtensionID: UInt16? {
        let videos = (camera.map { [$0.video] } ?? []) + slots
        let ids = Set(([audio.extensions] + videos.map(\.extensions)).compactMap(\.transportWideCC))
        let feedback = audio.feedback + videos.flatMap(\.codec.feedback)
        guard ids.count == 1, feedback.contains(where: RTCPFeedback.transportCC.isSameMessage) else { return nil }
        return ids.first
    }

    /// The abs-send-time extension's ID on the video slots, when the client estimates its
    /// downlink itself (REMB, no transport-cc) and every slot that maps it uses one ID: the
    /// client's receive-side estimator (aiortc's, libwebrtc's remote bitrate estimator) times
    /// the forwarded packets by it, and its REMB is what this subscriber's layers are chosen by.
    public var slotAbsoluteSendTimeExtensionID: UInt16? {
        guard transportWideCCExtensionID == nil else { return nil }
        let ids = Set(slots.compactMap(\.extensions.absSendTime))
        return ids.count == 1 ? ids.first : nil
    }

    /// The payload types the slots are answered with (what forwarded video and its RTX are
    /// sent as).
    public var slotPayloadTypes: Set<UInt8> {
        Set(slots.flatMap { [$0.codec.payloadType.rawValue] + ($0.codec.rtxPayloadType.map { [$0.rawValue] } ?? []) })
    }
}
