import ChorusCore

/// The RTP header extensions of one offered m= section that Chorus uses, with the offerer's IDs.
/// The answer echoes exactly these maps with the same IDs (RFC 8285 §6), so the media path can
/// read and write them by the IDs exposed here.
public struct HeaderExtensions: Sendable, Hashable {
    /// The supported maps as offered (directions are the offerer's), in offer order.
    public var maps: [ExtensionMap]

    /// URIs accepted on audio sections.
    public static let audioURIs: [String] = [
        ExtensionMap.URI.mid, ExtensionMap.URI.ssrcAudioLevel, ExtensionMap.URI.csrcAudioLevel,
        ExtensionMap.URI.transportWideCC, ExtensionMap.URI.absSendTime,
    ]
    /// URIs accepted on video sections.
    public static let videoURIs: [String] = [
        ExtensionMap.URI.mid, ExtensionMap.URI.transportWideCC, ExtensionMap.URI.absSendTime,
    ]
    /// URIs accepted, besides `videoURIs`, on a camera section that negotiates simulcast: the
    /// RID of each packet's simulcast stream, and of the stream an RTX packet repairs (RFC 8852).
    public static let simulcastURIs: [String] = [
        ExtensionMap.URI.rtpStreamID, ExtensionMap.URI.repairedRTPStreamID,
    ]

    public init(maps: [ExtensionMap]) {
        self.maps = maps
    }

    /// The offered maps whose URI is in `supported`: the first map per URI, IDs 1…255 only
    /// (4096…4351 would ask the answerer to pick an ID, which Chorus does not do).
    init(offered: [ExtensionMap], supported: [String]) {
        var kept: [ExtensionMap] = []
        for map in offered where supported.contains(map.uri) && (1...255).contains(map.id) {
            if !kept.contains(where: { $0.uri == map.uri }) { kept.append(map) }
        }
        self.init(maps: kept)
    }

    /// The ID negotiated for `uri`, or nil.
    public func id(for uri: String) -> UInt16? { maps.first { $0.uri == uri }?.id }

    /// `urn:ietf:params:rtp-hdrext:sdes:mid`.
    public var mid: UInt16? { id(for: ExtensionMap.URI.mid) }
    /// `urn:ietf:params:rtp-hdrext:ssrc-audio-level`.
    public var ssrcAudioLevel: UInt16? { id(for: ExtensionMap.URI.ssrcAudioLevel) }
    /// `urn:ietf:params:rtp-hdrext:csrc-audio-level`.
    public var csrcAudioLevel: UInt16? { id(for: ExtensionMap.URI.csrcAudioLevel) }
    /// Transport-wide congestion control sequence number.
    public var transportWideCC: UInt16? { id(for: ExtensionMap.URI.transportWideCC) }
    /// Absolute send time.
    public var absSendTime: UInt16? { id(for: ExtensionMap.URI.absSendTime) }
    /// `urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id` (RFC 8852 §3.1), with simulcast only.
    public var rtpStreamID: UInt16? { id(for: ExtensionMap.URI.rtpStreamID) }
    /// `urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id` (RFC 8852 §3.2), with simulcast only.
    public var repairedRTPStreamID: UInt16? { id(for: ExtensionMap.URI.repairedRTPStreamID) }
}

/// The negotiated audio m= section: Opus only (RFC 7587), since the mixer decodes and encodes.
public struct AudioSection: Sendable, Hashable {
    /// Position of the m= line in the offer (0-based).
    public var mLineIndex: Int
    public var mid: String
    /// The offer's direction; `sendrecv` for a talking participant, `recvonly` for a listener.
    public var offerDirection: Direction
    public var opusPayloadType: PayloadType
    /// The offer's `a=fmtp` for Opus, if any (its `stereo`, `maxplaybackrate`, …).
    public var opusParameters: FormatParameters?
    /// `useinbandfec=1`: the offerer decodes Opus in-band FEC, so the encoder may add it.
    public var useInbandFEC: Bool
    /// The `a=rtcp-fb` lines offered for Opus (wildcards bound to its payload type).
    public var feedback: [RTCPFeedback]
    public var extensions: HeaderExtensions
    /// The SSRC of the offerer's microphone stream, when it sends audio and announced one.
    public var ssrc: SSRC?
    /// `a=rtcp-rsize` was offered.
    public var rtcpReducedSize: Bool
    /// `a=extmap-allow-mixed` was offered on this section (Firefox's placement).
    public var extmapAllowMixed: Bool

    /// The direction the answer writes: the offer's, mirrored.
    public var answerDirection: Direction { offerDirection.reversed }
}

/// A video codec Chorus forwards. VP8 is preferred (every browser must support it, RFC 7742 §5);
/// H.264 is accepted in packetization-mode 1 only, the mode browsers use for non-interleaved FU-A.
public enum VideoCodecName: String, Sendable, Hashable {
    case vp8 = "VP8"
    case h264 = "H264"
}

/// The codec chosen for one video m= section, as the offerer numbered it.
public struct NegotiatedVideoCodec: Sendable, Hashable {
    public var name: VideoCodecName
    public var payloadType: PayloadType
    public var clockRate: UInt32
    /// The offer's `a=fmtp` for the codec (H.264 `profile-level-id`, …), if any.
    public var formatParameters: FormatParameters?
    /// The RTX payload type (`rtx/90000` with `apt=<payloadType>`), if offered.
    public var rtxPayloadType: PayloadType?
    /// The `a=rtcp-fb` lines offered for the codec (wildcards bound to its payload type).
    public var feedback: [RTCPFeedback]
}

/// A negotiated video m= section: the camera the offerer sends, or a slot it receives, or both.
public struct VideoSection: Sendable, Hashable {
    /// Position of the m= line in the offer (0-based).
    public var mLineIndex: Int
    public var mid: String
    public var offerDirection: Direction
    public var codec: NegotiatedVideoCodec
    public var extensions: HeaderExtensions
    public var rtcpReducedSize: Bool
    /// `a=extmap-allow-mixed` was offered on this section (Firefox's placement).
    public var extmapAllowMixed: Bool

    /// The direction the answer writes: the offer's, mirrored.
    public var answerDirection: Direction { offerDirection.reversed }
}

/// The offerer's camera: the one video m= section on which it sends (`sendonly`, or
/// `sendrecv` when the same section is also a slot), with the streams it announced and, when
/// it sends simulcast, its negotiated layers.
public struct CameraSection: Sendable, Hashable {
    public var video: VideoSection
    /// Distinct SSRCs of its `a=ssrc` lines, in order (none when Chrome sends simulcast RIDs).
    public var ssrcs: [SSRC]
    public var ssrcGroups: [SSRCGroup]
    /// The media SSRC: the first of the first `FID` group, else the first announced SSRC. With
    /// simulcast this is one layer's SSRC at best (Firefox announces one `FID` group per layer
    /// and does not say which RID each is): learn the layers' SSRCs from packets instead.
    public var primarySSRC: SSRC?
    /// The RTX SSRC: the second of that `FID` group, if any.
    public var rtxSSRC: SSRC?
    /// The `a=rid` lines as offered, in offer order (their order carries no meaning).
    public var rids: [RID]
    /// The `a=simulcast` attribute as offered.
    public var simulcast: Simulcast?
    /// The negotiated simulcast streams, in `a=simulcast:send` order (not the `a=rid` order,
    /// and not necessarily low to high: it is the order of the page's `sendEncodings`); the
    /// index is the layer index. Empty when the camera sends one stream.
    public var simulcastLayers: [SimulcastLayer] = []

    public var mid: String { video.mid }
    public var codec: NegotiatedVideoCodec { video.codec }
    public var extensions: HeaderExtensions { video.extensions }
    /// True for a `sendrecv` camera section: the server also sends a slot's video on it.
    public var isAlsoSlot: Bool { video.offerDirection == .sendrecv }
    /// True when the camera sends simulcast: its packets are told apart by RID.
    public var isSimulcast: Bool { !simulcastLayers.isEmpty }
    /// The RtpStreamId extension's ID (RFC 8852 §3.1): always set when `isSimulcast`, since
    /// simulcast is declined without it.
    public var rtpStreamIDExtension: UInt16? { extensions.rtpStreamID }
    /// The RepairedRtpStreamId extension's ID (RFC 8852 §3.2), when simulcast is negotiated and
    /// the offer maps it: RTX packets name the layer they repair with it.
    public var repairedRTPStreamIDExtension: UInt16? { extensions.repairedRTPStreamID }
}

/// What the answer does with one offered m= section, in offer order.
public struct SectionPlan: Sendable, Hashable {
    /// The part a section plays in the call; decides its answer direction and streams.
    public enum Role: Sendable, Hashable {
        case audio
        /// The camera, received only (`sendonly` offer).
        case camera
        /// A slot the server sends video on (`recvonly` offer).
        case slot
        /// A `sendrecv` video section: the camera up and a slot down.
        case cameraAndSlot
        /// Answered with port 0 and left out of BUNDLE.
        case rejected(RejectionReason)
    }

    /// Why the answer rejects a section (for logs and statistics; the wire only shows port 0).
    public enum RejectionReason: String, Sendable, Hashable {
        /// Not audio or video (for example a data channel, `m=application`).
        case unsupportedMedia
        /// The offer itself disabled it: port 0 without `a=bundle-only`.
        case disabledByOfferer
        /// A video section offered `inactive`: neither a camera nor a slot.
        case inactive
    }

    public var mLineIndex: Int
    public var media: String
    public var proto: String
    public var mid: String?
    /// The first format of the offered m= line; a rejected answer section repeats it.
    public var firstFormat: String
    public var role: Role

    public var isRejected: Bool {
        if case .rejected = role { return true }
        return false
    }
}
