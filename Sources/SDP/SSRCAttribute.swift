import ChorusCore

/// The source-specific attribute `a=ssrc:<ssrc> <attribute>[:<value>]` (RFC 5576 §4.1), e.g.
/// `a=ssrc:287706163 cname:PtsL16rNw51KpwFV`. It announces an RTP stream the author sends
/// (Firefox also lists the SSRC it uses for RTCP on receive-only sections).
public struct SSRCAttribute: Sendable, Hashable {
    public var ssrc: SSRC
    public var attribute: String
    /// Everything after the first `:` of the source attribute, nil when absent.
    public var attributeValue: String?

    public init(ssrc: SSRC, attribute: String, attributeValue: String? = nil) {
        self.ssrc = ssrc
        self.attribute = attribute
        self.attributeValue = attributeValue
    }

    /// Parses `287706163 cname:PtsL16rNw51KpwFV`; nil when the SSRC or attribute name is invalid.
    public init?(parsing value: String) {
        guard let (ssrcText, rest) = SDPSyntax.splitOnce(value, at: 0x20),
              let ssrc = SDPSyntax.decimal(ssrcText, as: UInt32.self).map(SSRC.init(rawValue:))
        else { return nil }
        if let (name, attributeValue) = SDPSyntax.splitOnce(rest, at: UInt8(ascii: ":")) {
            guard SDPSyntax.isToken(name) else { return nil }
            self.init(ssrc: ssrc, attribute: name, attributeValue: attributeValue)
        } else {
            guard SDPSyntax.isToken(rest) else { return nil }
            self.init(ssrc: ssrc, attribute: rest, attributeValue: nil)
        }
    }

    /// The attribute value, e.g. `287706163 cname:PtsL16rNw51KpwFV`.
    public var value: String {
        guard let attributeValue else { return "\(ssrc.rawValue) \(attribute)" }
        return "\(ssrc.rawValue) \(attribute):\(attributeValue)"
    }
}

/// The `a=ssrc-group:<semantics> <ssrc> …` attribute (RFC 5576 §4.2): relates the streams of one
/// source, e.g. `FID <media> <rtx>` (RFC 4588 retransmission) or `SIM` (legacy simulcast).
public struct SSRCGroup: Sendable, Hashable {
    public var semantics: String
    public var ssrcs: [SSRC]

    /// Flow identification: the first SSRC carries media, the second its RTX repair stream.
    public static let flowIdentification = "FID"

    public init(semantics: String, ssrcs: [SSRC]) {
        self.semantics = semantics
        self.ssrcs = ssrcs
    }

    /// Parses `FID 3586512339 3571480445`; nil when the semantics or an SSRC is invalid.
    public init?(parsing value: String) {
        let parts = SDPSyntax.fields(value)
        guard parts.count >= 2, SDPSyntax.isToken(parts[0]) else { return nil }
        var ssrcs: [SSRC] = []
        for part in parts.dropFirst() {
            guard let ssrc = SDPSyntax.decimal(part, as: UInt32.self) else { return nil }
            ssrcs.append(SSRC(rawValue: ssrc))
        }
        self.init(semantics: parts[0], ssrcs: ssrcs)
    }

    /// The attribute value, e.g. `FID 3586512339 3571480445`.
    public var value: String { ([semantics] + ssrcs.map { String($0.rawValue) }).joined(separator: " ") }
}
