/// UNKNOWN-ATTRIBUTES (RFC 8489 §14.9): in a 420 error response, the list of
/// comprehension-required attribute types the server did not understand, 16 bits each.
public enum UnknownAttributes {}

extension STUNMessage {
    /// The types listed in UNKNOWN-ATTRIBUTES; empty when absent.
    public var unknownAttributes: [STUNAttributeType] {
        guard let value = index.unknownAttributes else { return [] }
        return stride(from: value.lowerBound, to: value.upperBound &- 1, by: 2).compactMap { offset in
            bytes.stunUInt16(at: offset).map(STUNAttributeType.init(rawValue:))
        }
    }
}

extension STUNMessageBuilder {
    /// Appends UNKNOWN-ATTRIBUTES listing `types`.
    public mutating func appendUnknownAttributes(_ types: [STUNAttributeType]) {
        appendAttributeHeader(.unknownAttributes, length: 2 &* types.count)
        for type in types { bytes.appendBigEndian(type.rawValue) }
        appendPadding(valueLength: 2 &* types.count)
    }
}
