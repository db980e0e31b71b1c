import ChorusCore

/// The `a=rtcp-fb:<payload type|*> <type> [<parameter>]` attribute (RFC 4585 §4.2): which RTCP
/// feedback messages a receiver understands for a payload type, e.g. `nack`, `nack pli`,
/// `ccm fir` (RFC 5104), `goog-remb` and `transport-cc` (draft-holmer-rmcat-transport-wide-cc).
///
/// A nil `payloadType` is the `*` wildcard, which applies to every payload type of the m= line.
public struct RTCPFeedback: Sendable, Hashable {
    public var payloadType: PayloadType?
    public var type: String
    /// The rest of the line after the type (`pli` in `nack pli`), nil when absent.
    public var parameter: String?

    public static let nack = RTCPFeedback(payloadType: nil, type: "nack", parameter: nil)
    public static let pictureLossIndication = RTCPFeedback(payloadType: nil, type: "nack", parameter: "pli")
    public static let fullIntraRequest = RTCPFeedback(payloadType: nil, type: "ccm", parameter: "fir")
    public static let receiverEstimatedMaximumBitrate = RTCPFeedback(payloadType: nil, type: "goog-remb")
    public static let transportCC = RTCPFeedback(payloadType: nil, type: "transport-cc", parameter: nil)

    public init(payloadType: PayloadType?, type: String, parameter: String? = nil) {
        self.payloadType = payloadType
        self.type = type
        self.parameter = parameter
    }

    /// Parses `96 nack pli` or `* ccm fir`; nil when the payload type or type is invalid.
    public init?(parsing value: String) {
        let parts = SDPSyntax.fields(value)
        guard parts.count >= 2, SDPSyntax.isToken(parts[1]) else { return nil }
        var pt: PayloadType?
        if parts[0] != "*" {
            guard let parsed = SDPSyntax.payloadType(parts[0]) else { return nil }
            pt = parsed
        }
        let parameter = parts.count > 2 ? parts[2...].joined(separator: " ") : nil
        self.init(payloadType: pt, type: parts[1], parameter: parameter)
    }

    /// The attribute value, e.g. `96 nack pli`.
    public var value: String {
        let target = payloadType.map { String($0.rawValue) } ?? "*"
        guard let parameter else { return "\(target) \(type)" }
        return "\(target) \(type) \(parameter)"
    }

    /// The same feedback bound to another payload type (or to `*` with nil).
    public func with(payloadType: PayloadType?) -> RTCPFeedback {
        RTCPFeedback(payloadType: payloadType, type: type, parameter: parameter)
    }

    /// True when both name the same feedback message, whatever payload type each is bound to.
    /// Types and parameters compare ASCII case-insensitively.
    public func isSameMessage(as other: RTCPFeedback) -> Bool {
        SDPSyntax.equalsIgnoringCase(type, other.type)
            && SDPSyntax.lowercased(parameter ?? "") == SDPSyntax.lowercased(other.parameter ?? "")
    }
}
