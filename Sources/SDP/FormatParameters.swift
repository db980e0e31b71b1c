import ChorusCore

/// The `a=fmtp:<format> <format specific parameters>` attribute (RFC 8866 §6.15): codec
/// parameters for one format of an m= line, such as `minptime=10;useinbandfec=1` for Opus,
/// `apt=96` for RTX or `packetization-mode=1;profile-level-id=42e01f` for H.264.
///
/// The parameter text is kept verbatim (some codecs use forms like `0-15` or `111/111`);
/// `parameter(_:)` reads the common `name=value;name=value` form, names case-insensitive.
public struct FormatParameters: Sendable, Hashable {
    /// The format the parameters belong to; an RTP payload type for RTP media.
    public var format: String
    /// Everything after the first space, verbatim.
    public var parameters: String

    public init(format: String, parameters: String) {
        self.format = format
        self.parameters = parameters
    }

    /// Convenience for an RTP payload type.
    public init(payloadType: PayloadType, parameters: String) {
        self.init(format: String(payloadType.rawValue), parameters: parameters)
    }

    /// Parses `96 apt=97`; nil when the format is missing or not a token.
    public init?(parsing value: String) {
        let bytes = Array(value.utf8)
        let end = bytes.firstIndex(of: 0x20) ?? bytes.endIndex
        let format = String(decoding: bytes[..<end], as: UTF8.self)
        guard SDPSyntax.isToken(format) else { return nil }
        let rest = end < bytes.endIndex ? String(decoding: bytes[(end + 1)...], as: UTF8.self) : ""
        self.init(format: format, parameters: SDPSyntax.trimmed(rest))
    }

    /// The attribute value, e.g. `111 minptime=10;useinbandfec=1`.
    public var value: String { parameters.isEmpty ? format : format + " " + parameters }

    /// The format as an RTP payload type, or nil when it is not one.
    public var payloadType: PayloadType? { SDPSyntax.payloadType(format) }

    /// One `name[=value]` item of the parameter list.
    public struct Parameter: Sendable, Hashable {
        public var name: String
        public var value: String?
    }

    /// The `;`-separated items, spaces trimmed, in order.
    public var parameterList: [Parameter] {
        SDPSyntax.split(parameters, at: UInt8(ascii: ";")).compactMap { item in
            let trimmed = SDPSyntax.trimmed(item)
            guard !trimmed.isEmpty else { return nil }
            if let (name, value) = SDPSyntax.splitOnce(trimmed, at: UInt8(ascii: "=")) {
                return Parameter(name: SDPSyntax.trimmed(name), value: SDPSyntax.trimmed(value))
            }
            return Parameter(name: trimmed, value: nil)
        }
    }

    /// The value of the first parameter called `name` (ASCII case-insensitive), or nil.
    public func parameter(_ name: String) -> String? {
        parameterList.first { SDPSyntax.equalsIgnoringCase($0.name, name) }?.value
    }
}
