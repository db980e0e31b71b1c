/// SOFTWARE (RFC 8489 §14.14): a comprehension-optional description of the sending software,
/// for diagnostics only. Fewer than 128 characters, at most 763 bytes of UTF-8.
public enum Software {
    public static let maximumLength = 763
}

extension STUNMessage {
    /// SOFTWARE as text; nil when absent.
    public var software: String? {
        index.software.map { String(decoding: bytes[$0], as: UTF8.self) }
    }
}

extension STUNMessageBuilder {
    /// Appends SOFTWARE, cut at a Unicode scalar boundary to the 763-byte limit.
    public mutating func appendSoftware(_ description: String) {
        if description.utf8.count <= Software.maximumLength {
            appendAttribute(.software, value: description.utf8)
            return
        }
        var budget = Software.maximumLength
        var value: [UInt8] = []
        for scalar in description.unicodeScalars {
            let encoded = Array(String(scalar).utf8)
            guard encoded.count <= budget else { break }
            budget -= encoded.count
            value.append(contentsOf: encoded)
        }
        appendAttribute(.software, value: value)
    }
}
