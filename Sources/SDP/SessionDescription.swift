/// A parsed SDP session description (RFC 8866): the session-level lines and the media
/// descriptions, in order. The subset WebRTC uses is typed (`v o s c t m a`); other line types
/// (`i u e p b r z k`) are skipped, and unknown attributes are kept as `Attribute.other`.
///
/// Driven in two ways: `init(parsing:)` reads a peer's offer (bounded, never traps, throws
/// `SDPOfferError` naming the bad line), and `text` writes a description Chorus built, such as
/// the answer from `AnswerBuilder`. It is a plain value with no I/O.
public struct SessionDescription: Sendable, Hashable {
    /// The parser's default size limit. An offer grows by ~5 KB per Chrome receive-only video
    /// section, and a room allows up to 25 video slots, so a legitimate offer can exceed 128 KB;
    /// 256 KiB leaves headroom while still bounding the work one request can cause.
    public static let defaultMaximumBytes = 256 * 1024

    public var origin: Origin
    /// The `s=` line; WebRTC writes `-`.
    public var sessionName: String
    public var connection: ConnectionData?
    /// The first `t=` line (WebRTC writes exactly one, `t=0 0`).
    public var timing: Timing
    /// Session-level attributes, in order.
    public var attributes: [Attribute]
    public var media: [MediaDescription]

    public init(origin: Origin, sessionName: String = "-", connection: ConnectionData? = nil,
                timing: Timing = Timing(), attributes: [Attribute] = [], media: [MediaDescription] = []) {
        self.origin = origin
        self.sessionName = sessionName
        self.connection = connection
        self.timing = timing
        self.attributes = attributes
        self.media = media
    }

    /// Parses SDP text with CRLF or LF line endings.
    /// - Throws: `tooLarge` beyond `maximumBytes` UTF-8 bytes, `malformed(line:reason:)` for the
    ///   first line that breaks the grammar, including a known attribute with a bad value.
    public init(parsing text: String, maximumBytes: Int = defaultMaximumBytes) throws(SDPOfferError) {
        let count = text.utf8.count
        guard count <= maximumBytes else { throw .tooLarge(bytes: count, limit: maximumBytes) }
        var parser = SDPParser()
        self = try parser.parse(Array(text.utf8))
    }

    /// Parses SDP bytes; invalid UTF-8 is read as U+FFFD, which no typed attribute accepts.
    public init(parsing bytes: [UInt8], maximumBytes: Int = defaultMaximumBytes) throws(SDPOfferError) {
        guard bytes.count <= maximumBytes else { throw .tooLarge(bytes: bytes.count, limit: maximumBytes) }
        var parser = SDPParser()
        self = try parser.parse(bytes)
    }

    /// The description as SDP text: CRLF after every line, including the last (RFC 8866 §5).
    public var text: String {
        var lines = ["v=0", "o=" + origin.value, "s=" + sessionName]
        if let connection { lines.append("c=" + connection.value) }
        lines.append("t=" + timing.value)
        lines += attributes.map(\.line)
        for section in media { lines += section.lines }
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}

/// Typed reads of the session-level attributes, and the direction rule for sections.
extension SessionDescription {
    /// The `a=group:BUNDLE` groups at session level.
    public var bundleGroups: [Group] {
        attributes.compactMap { if case .group(let group) = $0, group.isBundle { group } else { nil } }
    }

    /// True when the author is an ICE-lite agent (`a=ice-lite`).
    public var isICELite: Bool { attributes.contains(.iceLite) }

    public var iceOptions: [String] {
        for case .iceOptions(let options) in attributes { return options }
        return []
    }

    public var fingerprints: [CertificateFingerprint] {
        attributes.compactMap { if case .fingerprint(let fingerprint) = $0 { fingerprint } else { nil } }
    }

    public var hasExtmapAllowMixed: Bool { attributes.contains(.extmapAllowMixed) }

    /// The effective direction of `section`: its own attribute, else the session's, else
    /// `sendrecv` (RFC 8866 §6.7).
    public func direction(of section: MediaDescription) -> Direction {
        section.direction ?? direction ?? .sendrecv
    }
}
