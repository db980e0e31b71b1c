/// One `a=<name>[:<value>]` line (RFC 8866 §5.13), typed when Chorus knows the attribute.
///
/// `init(name:value:)` returns nil when a known attribute's value breaks its grammar; the
/// parser turns that into `SDPOfferError.malformed` with the line number. Attributes Chorus does
/// not know are kept as `.other` so that a description survives a parse/serialize round trip.
/// A flag attribute written with a value (`a=rtcp-mux:x`) is not the flag and stays `.other`.
public enum Attribute: Sendable, Hashable {
    case rtpMap(RTPMap)
    case formatParameters(FormatParameters)
    case rtcpFeedback(RTCPFeedback)
    case extensionMap(ExtensionMap)
    case fingerprint(CertificateFingerprint)
    case candidate(Candidate)
    case ssrc(SSRCAttribute)
    case ssrcGroup(SSRCGroup)
    case group(Group)
    case mid(String)
    case msid(MediaStreamID)
    case rid(RID)
    case simulcast(Simulcast)
    case setup(Setup)
    case direction(Direction)
    case iceUfrag(String)
    case icePwd(String)
    /// `a=ice-options:trickle ice2` (RFC 8839 §5.6).
    case iceOptions([String])
    /// `a=ice-lite` (RFC 8839 §5.3), session level only.
    case iceLite
    /// `a=end-of-candidates` (RFC 8840 §8.2).
    case endOfCandidates
    /// `a=rtcp-mux` (RFC 5761 §5.1.1): RTP and RTCP share one port.
    case rtcpMux
    /// `a=rtcp-rsize` (RFC 5506 §5): reduced-size RTCP is allowed.
    case rtcpReducedSize
    /// `a=extmap-allow-mixed` (RFC 8285 §6): one-byte and two-byte header extensions may mix.
    case extmapAllowMixed
    /// `a=bundle-only` (RFC 8843 §6): a port-0 m= section that is in use only through BUNDLE.
    case bundleOnly
    case other(name: String, value: String?)

    /// Types the attribute called `name`; nil when a known attribute has an invalid value.
    public init?(name: String, value: String?) {
        if let value {
            guard let parsed = Self.valued(name: name, value: value) else { return nil }
            self = parsed
        } else {
            self = Self.flag(name: name)
        }
    }

    private static func valued(name: String, value: String) -> Attribute? {
        switch name {
        case "rtpmap": return RTPMap(parsing: value).map(Attribute.rtpMap)
        case "fmtp": return FormatParameters(parsing: value).map(Attribute.formatParameters)
        case "rtcp-fb": return RTCPFeedback(parsing: value).map(Attribute.rtcpFeedback)
        case "extmap": return ExtensionMap(parsing: value).map(Attribute.extensionMap)
        case "fingerprint": return CertificateFingerprint(parsing: value).map(Attribute.fingerprint)
        case "candidate": return Candidate(parsing: value).map(Attribute.candidate)
        case "ssrc": return SSRCAttribute(parsing: value).map(Attribute.ssrc)
        case "ssrc-group": return SSRCGroup(parsing: value).map(Attribute.ssrcGroup)
        case "group": return Group(parsing: value).map(Attribute.group)
        case "msid": return MediaStreamID(parsing: value).map(Attribute.msid)
        case "rid": return RID(parsing: value).map(Attribute.rid)
        case "simulcast": return Simulcast(parsing: value).map(Attribute.simulcast)
        case "setup": return Setup(rawValue: SDPSyntax.trimmed(value)).map(Attribute.setup)
        case "mid": return SDPSyntax.isToken(value) ? .mid(value) : nil
        case "ice-ufrag": return SDPSyntax.isVisible(value) ? .iceUfrag(value) : nil
        case "ice-pwd": return SDPSyntax.isVisible(value) ? .icePwd(value) : nil
        case "ice-options":
            let options = SDPSyntax.fields(value)
            return options.allSatisfy(SDPSyntax.isVisible) ? .iceOptions(options) : nil
        default: return .other(name: name, value: value)
        }
    }

    private static func flag(name: String) -> Attribute {
        switch name {
        case "sendrecv": return .direction(.sendrecv)
        case "sendonly": return .direction(.sendonly)
        case "recvonly": return .direction(.recvonly)
        case "inactive": return .direction(.inactive)
        case "ice-lite": return .iceLite
        case "end-of-candidates": return .endOfCandidates
        case "rtcp-mux": return .rtcpMux
        case "rtcp-rsize": return .rtcpReducedSize
        case "extmap-allow-mixed": return .extmapAllowMixed
        case "bundle-only": return .bundleOnly
        default: return .other(name: name, value: nil)
        }
    }

    /// The attribute name as written after `a=`.
    public var name: String {
        switch self {
        case .rtpMap: return "rtpmap"
        case .formatParameters: return "fmtp"
        case .rtcpFeedback: return "rtcp-fb"
        case .extensionMap: return "extmap"
        case .fingerprint: return "fingerprint"
        case .candidate: return "candidate"
        case .ssrc: return "ssrc"
        case .ssrcGroup: return "ssrc-group"
        case .group: return "group"
        case .mid: return "mid"
        case .msid: return "msid"
        case .rid: return "rid"
        case .simulcast: return "simulcast"
        case .setup: return "setup"
        case .direction(let direction): return direction.rawValue
        case .iceUfrag: return "ice-ufrag"
        case .icePwd: return "ice-pwd"
        case .iceOptions: return "ice-options"
        case .iceLite: return "ice-lite"
        case .endOfCandidates: return "end-of-candidates"
        case .rtcpMux: return "rtcp-mux"
        case .rtcpReducedSize: return "rtcp-rsize"
        case .extmapAllowMixed: return "extmap-allow-mixed"
        case .bundleOnly: return "bundle-only"
        case .other(let name, _): return name
        }
    }

    /// The text after `a=<name>:`, or nil for a flag attribute.
    public var value: String? {
        switch self {
        case .rtpMap(let map): return map.value
        case .formatParameters(let parameters): return parameters.value
        case .rtcpFeedback(let feedback): return feedback.value
        case .extensionMap(let map): return map.value
        case .fingerprint(let fingerprint): return fingerprint.value
        case .candidate(let candidate): return candidate.value
        case .ssrc(let ssrc): return ssrc.value
        case .ssrcGroup(let group): return group.value
        case .group(let group): return group.value
        case .mid(let mid): return mid
        case .msid(let msid): return msid.value
        case .rid(let rid): return rid.value
        case .simulcast(let simulcast): return simulcast.value
        case .setup(let setup): return setup.rawValue
        case .iceUfrag(let ufrag): return ufrag
        case .icePwd(let pwd): return pwd
        case .iceOptions(let options): return options.joined(separator: " ")
        case .direction, .iceLite, .endOfCandidates, .rtcpMux, .rtcpReducedSize, .extmapAllowMixed, .bundleOnly:
            return nil
        case .other(_, let value): return value
        }
    }

    /// The whole line without its line ending, e.g. `a=mid:0`.
    public var line: String {
        guard let value else { return "a=" + name }
        return "a=" + name + ":" + value
    }
}
