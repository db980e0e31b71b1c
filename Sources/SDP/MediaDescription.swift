import ChorusCore

/// One media description: an `m=<media> <port>[/<count>] <proto> <fmt> …` line with the `c=`
/// and `a=` lines under it (RFC 8866 §5.14). In WebRTC each is one transceiver, named by
/// `a=mid`; with BUNDLE they all share one transport.
///
/// A value type: the parser fills it, the answer builder assembles one, `lines` writes it.
/// The typed accessors below read the attribute list; each scans it once, so callers that
/// look up many payload types build a `PayloadTypeIndex` instead.
public struct MediaDescription: Sendable, Hashable {
    /// `audio`, `video`, `application`, … as written.
    public var media: String
    /// 0 rejects the section, unless `a=bundle-only` is present (RFC 8843 §6).
    public var port: UInt16
    public var numberOfPorts: UInt16?
    /// `UDP/TLS/RTP/SAVPF` for WebRTC media.
    public var proto: String
    /// Payload types as text for RTP media; for other protos, whatever tokens were written.
    public var formats: [String]
    public var connection: ConnectionData?
    public var attributes: [Attribute]

    public init(media: String, port: UInt16, numberOfPorts: UInt16? = nil, proto: String, formats: [String],
                connection: ConnectionData? = nil, attributes: [Attribute] = []) {
        self.media = media
        self.port = port
        self.numberOfPorts = numberOfPorts
        self.proto = proto
        self.formats = formats
        self.connection = connection
        self.attributes = attributes
    }

    /// True when the proto is an RTP profile (its formats are then payload types).
    public var isRTP: Bool { Self.isRTPProto(proto) }

    static func isRTPProto(_ proto: String) -> Bool {
        SDPSyntax.split(proto, at: UInt8(ascii: "/")).contains("RTP")
    }

    /// The formats as RTP payload types, in m= line order (non-numeric formats skipped).
    public var payloadTypes: [PayloadType] { formats.compactMap { SDPSyntax.payloadType($0) } }

    /// The `m=` line value after `m=`.
    public var mediaLineValue: String {
        let port = numberOfPorts.map { "\(self.port)/\($0)" } ?? String(self.port)
        return ([media, port, proto] + formats).joined(separator: " ")
    }

    /// The section's lines without line endings: `m=`, then `c=`, then the attributes.
    public var lines: [String] {
        var lines = ["m=" + mediaLineValue]
        if let connection { lines.append("c=" + connection.value) }
        lines += attributes.map(\.line)
        return lines
    }
}

/// Typed reads of the section's attributes; each returns the first match, or all matches.
extension MediaDescription {
    /// `a=mid`, nil when absent.
    public var mid: String? {
        for case .mid(let mid) in attributes { return mid }
        return nil
    }

    /// `a=ice-options`, nil when absent (the session level then applies).
    public var iceOptions: [String]? {
        for case .iceOptions(let options) in attributes { return options }
        return nil
    }

    /// `a=msid`, nil when absent (receive-only sections usually carry none).
    public var mediaStreamID: MediaStreamID? {
        for case .msid(let msid) in attributes { return msid }
        return nil
    }

    /// `a=simulcast`, nil when absent.
    public var simulcast: Simulcast? {
        for case .simulcast(let simulcast) in attributes { return simulcast }
        return nil
    }

    public var isBundleOnly: Bool { attributes.contains(.bundleOnly) }
    public var hasRTCPMux: Bool { attributes.contains(.rtcpMux) }
    public var hasRTCPReducedSize: Bool { attributes.contains(.rtcpReducedSize) }
    public var hasExtmapAllowMixed: Bool { attributes.contains(.extmapAllowMixed) }
    public var hasEndOfCandidates: Bool { attributes.contains(.endOfCandidates) }

    /// True when the offerer uses the section: a non-zero port, or port 0 with `a=bundle-only`.
    /// A port-0 section without bundle-only is one the offerer rejected (RFC 3264 §8.2).
    public var isInUse: Bool { port != 0 || isBundleOnly }

    public var rtpMaps: [RTPMap] { attributes.compactMap { if case .rtpMap(let v) = $0 { v } else { nil } } }
    public var formatParameters: [FormatParameters] {
        attributes.compactMap { if case .formatParameters(let v) = $0 { v } else { nil } }
    }
    public var rtcpFeedback: [RTCPFeedback] {
        attributes.compactMap { if case .rtcpFeedback(let v) = $0 { v } else { nil } }
    }
    public var extensionMaps: [ExtensionMap] {
        attributes.compactMap { if case .extensionMap(let v) = $0 { v } else { nil } }
    }
    public var fingerprints: [CertificateFingerprint] {
        attributes.compactMap { if case .fingerprint(let v) = $0 { v } else { nil } }
    }
    public var candidates: [Candidate] {
        attributes.compactMap { if case .candidate(let v) = $0 { v } else { nil } }
    }
    public var ssrcAttributes: [SSRCAttribute] {
        attributes.compactMap { if case .ssrc(let v) = $0 { v } else { nil } }
    }
    public var ssrcGroups: [SSRCGroup] {
        attributes.compactMap { if case .ssrcGroup(let v) = $0 { v } else { nil } }
    }
    public var rids: [RID] { attributes.compactMap { if case .rid(let v) = $0 { v } else { nil } } }

    /// The distinct SSRCs of the `a=ssrc` lines, in order of first appearance.
    public var ssrcs: [SSRC] {
        var seen = Set<SSRC>()
        return ssrcAttributes.compactMap { seen.insert($0.ssrc).inserted ? $0.ssrc : nil }
    }
}
