import ChorusCore

/// The `a=rtpmap:<payload type> <encoding name>/<clock rate>[/<encoding parameters>]` attribute
/// (RFC 8866 §6.6): binds a dynamic RTP payload type of an m= line to a codec.
///
/// Parsed from the text after `a=rtpmap:`; `value` writes it back. Encoding names compare
/// case-insensitively (`opus`, `VP8`, `H264`), so use `isEncoding(_:)` rather than `==`.
public struct RTPMap: Sendable, Hashable {
    public var payloadType: PayloadType
    public var encodingName: String
    public var clockRate: UInt32
    /// For audio, the number of channels (`2` in `opus/48000/2`); nil when absent.
    public var encodingParameters: String?

    public init(payloadType: PayloadType, encodingName: String, clockRate: UInt32, encodingParameters: String? = nil) {
        self.payloadType = payloadType
        self.encodingName = encodingName
        self.clockRate = clockRate
        self.encodingParameters = encodingParameters
    }

    /// Parses `111 opus/48000/2`; nil when any part is missing or out of range.
    public init?(parsing value: String) {
        let parts = SDPSyntax.fields(value)
        guard parts.count == 2, let pt = SDPSyntax.payloadType(parts[0]) else { return nil }
        let codec = SDPSyntax.split(parts[1], at: UInt8(ascii: "/"))
        guard codec.count == 2 || codec.count == 3, SDPSyntax.isToken(codec[0]),
              let rate = SDPSyntax.decimal(codec[1], as: UInt32.self), rate > 0
        else { return nil }
        var parameters: String?
        if codec.count == 3 {
            guard SDPSyntax.isToken(codec[2]) else { return nil }
            parameters = codec[2]
        }
        self.init(payloadType: pt, encodingName: codec[0], clockRate: rate, encodingParameters: parameters)
    }

    /// The attribute value, e.g. `111 opus/48000/2`.
    public var value: String {
        var text = "\(payloadType) \(encodingName)/\(clockRate)"
        if let encodingParameters { text += "/" + encodingParameters }
        return text
    }

    /// True when the encoding name equals `name`, ignoring ASCII case.
    public func isEncoding(_ name: String) -> Bool {
        SDPSyntax.equalsIgnoringCase(encodingName, name)
    }
}
