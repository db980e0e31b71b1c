/// The `a=extmap:<id>[/<direction>] <URI> [<extension attributes>]` attribute (RFC 8285 §5):
/// binds an RTP header extension to the local identifier carried in each packet.
///
/// The direction, when present, is the author's (RFC 8285 §6); an answer mirrors it with
/// `Direction.reversed`. The URIs Chorus understands are the static `URI` constants.
public struct ExtensionMap: Sendable, Hashable {
    /// 1…14 for one-byte headers, up to 255 with two-byte headers, 4096…4351 in offers
    /// that let the answerer choose (RFC 8285 §6).
    public var id: UInt16
    public var direction: Direction?
    public var uri: String
    /// Extension-specific attributes after the URI, verbatim; nil when absent.
    public var extensionAttributes: String?

    /// Header extension URIs the Chorus media path reads or writes.
    public enum URI {
        /// RFC 8843 §15.2: the MID of the m= section a packet belongs to.
        public static let mid = "urn:ietf:params:rtp-hdrext:sdes:mid"
        /// RFC 6464: the sender's own audio level (voice activity).
        public static let ssrcAudioLevel = "urn:ietf:params:rtp-hdrext:ssrc-audio-level"
        /// RFC 6465: a mixer's per-contributor audio levels.
        public static let csrcAudioLevel = "urn:ietf:params:rtp-hdrext:csrc-audio-level"
        /// draft-holmer-rmcat-transport-wide-cc-extensions-01: transport-wide sequence number.
        public static let transportWideCC = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"
        /// The absolute send time used by REMB bandwidth estimation.
        public static let absSendTime = "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time"
        /// RFC 8852 §3.1: RtpStreamId, the `a=rid` of a simulcast encoding.
        public static let rtpStreamID = "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"
        /// RFC 8852 §3.2: RepairedRtpStreamId, the `a=rid` an RTX stream repairs.
        public static let repairedRTPStreamID = "urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id"
    }

    public init(id: UInt16, direction: Direction? = nil, uri: String, extensionAttributes: String? = nil) {
        self.id = id
        self.direction = direction
        self.uri = uri
        self.extensionAttributes = extensionAttributes
    }

    /// Parses `2/recvonly urn:ietf:params:rtp-hdrext:csrc-audio-level`; nil when the ID is out
    /// of range, the direction unknown or the URI missing.
    public init?(parsing value: String) {
        let parts = SDPSyntax.fields(value)
        guard parts.count >= 2, SDPSyntax.isVisible(parts[1]) else { return nil }
        let head = SDPSyntax.split(parts[0], at: UInt8(ascii: "/"))
        guard head.count <= 2, let id = SDPSyntax.decimal(head[0], as: UInt16.self),
              (1...255).contains(id) || (4096...4351).contains(id)
        else { return nil }
        var direction: Direction?
        if head.count == 2 {
            guard let parsed = Direction(rawValue: head[1]) else { return nil }
            direction = parsed
        }
        let attributes = parts.count > 2 ? parts[2...].joined(separator: " ") : nil
        self.init(id: id, direction: direction, uri: parts[1], extensionAttributes: attributes)
    }

    /// The attribute value, e.g. `2/recvonly urn:ietf:params:rtp-hdrext:csrc-audio-level`.
    public var value: String {
        var text = String(id)
        if let direction { text += "/" + direction.rawValue }
        text += " " + uri
        if let extensionAttributes { text += " " + extensionAttributes }
        return text
    }
}
