import ChorusCore

/// One RTP stream the server sends in an m= section: the room's audio mix, or a video slot.
/// `cname` is shared (`LocalParameters.cname`); `streamID`/`trackID` become `a=msid`, which
/// the browser uses to build the remote `MediaStream` and `MediaStreamTrack`.
public struct OutgoingStream: Sendable, Hashable {
    public var ssrc: SSRC
    /// The RTX SSRC of a video slot; required when the slot negotiated RTX, ignored otherwise.
    public var rtxSSRC: SSRC?
    /// 1–64 token characters (RFC 8830 §2 msid-id).
    public var streamID: String
    /// 1–64 token characters.
    public var trackID: String

    public init(ssrc: SSRC, rtxSSRC: SSRC? = nil, streamID: String, trackID: String) {
        self.ssrc = ssrc
        self.rtxSSRC = rtxSSRC
        self.streamID = streamID
        self.trackID = trackID
    }
}

/// The server's side of one answer: its ICE credentials, DTLS certificate fingerprint, host
/// candidate and the SSRCs it will send. The caller (the room, on join) generates all of it;
/// `AnswerBuilder` checks every field before writing it, so a bad value is an error, never a
/// broken or injected SDP line.
public struct LocalParameters: Sendable, Hashable {
    /// The `o=` session ID: a random number below 2^63 (RFC 8829 §5.2.1).
    public var sessionID: UInt64
    public var sessionVersion: UInt64
    public var iceUfrag: String
    public var icePwd: String
    /// The server certificate's fingerprint, e.g. `CertificateFingerprint(parsing: "sha-256 AA:…")`.
    public var fingerprint: CertificateFingerprint
    /// The host candidate's IP literal, IPv4 (`192.0.2.1`) or IPv6 (`2001:db8::1`).
    public var candidateAddress: String
    /// The media UDP port.
    public var candidatePort: UInt16
    /// The ICE-TCP port (RFC 6544), offered as a passive TCP host candidate after the UDP one;
    /// nil when ICE-TCP is off.
    public var candidateTCPPort: UInt16?
    /// More addresses the server is reachable at (an IPv6 address beside the IPv4 one, say):
    /// each gets host candidates of its own, after `candidateAddress`'s.
    public var additionalCandidateAddresses: [String] = []
    /// RTCP CNAME of every stream the server sends (RFC 7022).
    public var cname: String
    /// The room's audio mix for this participant.
    public var audioStream: OutgoingStream
    /// One stream per video slot, in the order of `OfferAnalysis.slots`.
    public var slotStreams: [OutgoingStream]

    public init(sessionID: UInt64, sessionVersion: UInt64 = 2, iceUfrag: String, icePwd: String,
                fingerprint: CertificateFingerprint, candidateAddress: String, candidatePort: UInt16,
                cname: String, audioStream: OutgoingStream, slotStreams: [OutgoingStream]) {
        self.sessionID = sessionID
        self.sessionVersion = sessionVersion
        self.iceUfrag = iceUfrag
        self.icePwd = icePwd
        self.fingerprint = fingerprint
        self.candidateAddress = candidateAddress
        self.candidatePort = candidatePort
        self.cname = cname
        self.audioStream = audioStream
        self.slotStreams = slotStreams
    }

    /// True for an IPv6 literal (the `c=` line then says `IP6`).
    var isIPv6: Bool { candidateAddress.utf8.contains(UInt8(ascii: ":")) }

    /// Throws the name of the first field that cannot be written into SDP as is.
    func validate() throws(AnswerError) {
        guard OfferAnalysis.isICEChars(iceUfrag, count: 4...256) else { throw .invalidLocalParameter("iceUfrag") }
        guard OfferAnalysis.isICEChars(icePwd, count: 22...256) else { throw .invalidLocalParameter("icePwd") }
        guard fingerprint.isSupported,
              CertificateFingerprint.digestLength(of: fingerprint.hashFunction) == fingerprint.digest.count
        else { throw .invalidLocalParameter("fingerprint") }
        guard Self.isIPLiteral(candidateAddress) else { throw .invalidLocalParameter("candidateAddress") }
        guard candidatePort != 0 else { throw .invalidLocalParameter("candidatePort") }
        guard candidateTCPPort != 0 else { throw .invalidLocalParameter("candidateTCPPort") }
        guard additionalCandidateAddresses.count <= 8, additionalCandidateAddresses.allSatisfy(Self.isIPLiteral) else {
            throw .invalidLocalParameter("additionalCandidateAddresses")
        }
        guard SDPSyntax.isVisible(cname), cname.utf8.count <= 255 else { throw .invalidLocalParameter("cname") }
        for stream in [audioStream] + slotStreams {
            guard Self.isMSIDToken(stream.streamID) else { throw .invalidLocalParameter("streamID") }
            guard Self.isMSIDToken(stream.trackID) else { throw .invalidLocalParameter("trackID") }
        }
    }

    static func isMSIDToken(_ text: String) -> Bool { SDPSyntax.isToken(text) && text.utf8.count <= 64 }

    /// Dotted IPv4, or an IPv6 literal (RFC 4291 §2.2 text forms, no zone ID such as `%eth0`,
    /// which means nothing to the peer).
    public static func isIPLiteral(_ text: String) -> Bool {
        TransportAddress(ipv4: text, port: 0) != nil || isIPv6Literal(text)
    }

    static func isIPv6Literal(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        let colon = UInt8(ascii: ":")
        guard (2...45).contains(bytes.count) else { return false }
        var doubleColons = 0
        for index in bytes.indices.dropLast() where bytes[index] == colon && bytes[index + 1] == colon {
            doubleColons += 1
        }
        // A leading or trailing colon must be half of the one "::".
        guard doubleColons <= 1, bytes.first != colon || bytes.starts(with: [colon, colon]),
              bytes.last != colon || bytes.reversed().starts(with: [colon, colon])
        else { return false }
        var groups = SDPSyntax.split(text, at: colon)
        var units = 0
        if let last = groups.last, last.utf8.contains(UInt8(ascii: ".")) {
            guard TransportAddress(ipv4: last, port: 0) != nil else { return false }
            groups.removeLast()
            units = 2
        }
        for group in groups where !group.isEmpty {
            guard group.utf8.count <= 4, group.utf8.allSatisfy({ SDPSyntax.hexValue($0) != nil }) else { return false }
            units += 1
        }
        return doubleColons == 1 ? units <= 7 : units == 8
    }
}

/// Why `AnswerBuilder` could not write an answer. These are server-side mistakes (the offer was
/// already accepted by `OfferAnalysis`), reported as values so the join fails without a trap.
public enum AnswerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A local parameter cannot be written into SDP; the payload names the field.
    case invalidLocalParameter(String)
    /// `LocalParameters.slotStreams` must have one stream per `OfferAnalysis.slots` entry.
    case slotStreamCount(expected: Int, provided: Int)
    /// The slot with this mid negotiated RTX, but its stream has no `rtxSSRC`.
    case missingRTXSSRC(mid: String)

    public var description: String {
        switch self {
        case .invalidLocalParameter(let field): return "local parameter \(field) cannot be written into SDP"
        case .slotStreamCount(let expected, let provided):
            return "the offer has \(expected) video slots but \(provided) slot streams were given"
        case .missingRTXSSRC(let mid): return "slot \(mid) negotiated RTX but its stream has no RTX SSRC"
        }
    }
}
