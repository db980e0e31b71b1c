import ChorusCore

/// Small lexical helpers shared by the attribute parsers: the RFC 8866 §9 grammar's `token`,
/// space-separated fields and strict decimal numbers. They work on UTF-8 bytes so that every
/// split lands on an ASCII delimiter, whatever the peer sent (Swift's `Character` splitting would
/// merge a delimiter with a following combining mark).
enum SDPSyntax {
    /// The text split at ASCII spaces, empty fields dropped (tolerates doubled spaces).
    static func fields(_ text: some StringProtocol) -> [String] {
        text.utf8.split(separator: 0x20).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The text split at the first `separator` byte, or nil when it does not occur.
    static func splitOnce(_ text: some StringProtocol, at separator: UInt8) -> (String, String)? {
        let bytes = Array(text.utf8)
        guard let index = bytes.firstIndex(of: separator) else { return nil }
        return (String(decoding: bytes[..<index], as: UTF8.self),
                String(decoding: bytes[(index + 1)...], as: UTF8.self))
    }

    /// The text split at every `separator` byte, keeping empty pieces.
    static func split(_ text: some StringProtocol, at separator: UInt8) -> [String] {
        text.utf8.split(separator: separator, omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self) }
    }

    /// A decimal made only of ASCII digits (no sign, no spaces) that fits `T`; nil otherwise.
    /// `Int("+5")` accepts a sign, which SDP's grammar does not.
    static func decimal<T: FixedWidthInteger>(_ text: some StringProtocol, as type: T.Type = T.self) -> T? {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= 20 else { return nil }
        var value: T = 0
        for byte in bytes {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = shifted.addingReportingOverflow(T(byte - 0x30))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    /// An RTP payload type, 0…127 (RFC 3550 §5.1: seven bits).
    static func payloadType(_ text: some StringProtocol) -> PayloadType? {
        decimal(text, as: UInt8.self).flatMap { PayloadType(rawValue: $0) }
    }

    /// RFC 8866 `token`: one or more visible ASCII characters other than the separators.
    static func isToken(_ text: some StringProtocol) -> Bool {
        !text.utf8.isEmpty && text.utf8.allSatisfy(isTokenByte)
    }

    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x21, 0x23...0x27, 0x2A...0x2B, 0x2D...0x2E, 0x30...0x39, 0x41...0x5A, 0x5E...0x7E:
            return true
        default:
            return false
        }
    }

    /// Visible ASCII with no spaces (`1*VCHAR`); used for values that are not strict tokens,
    /// such as URIs and ICE candidate addresses.
    static func isVisible(_ text: some StringProtocol) -> Bool {
        !text.utf8.isEmpty && text.utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7E }
    }

    /// The value of one ASCII hex digit, or nil. (`UInt8(_:radix:)` would accept a sign.)
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x41...0x46: return byte - 0x41 + 10
        case 0x61...0x66: return byte - 0x61 + 10
        default: return nil
        }
    }

    /// ASCII-lowercased copy; SDP's case-insensitive names are all ASCII.
    static func lowercased(_ text: some StringProtocol) -> String {
        String(decoding: text.utf8.map { ($0 >= 0x41 && $0 <= 0x5A) ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// Case-insensitive ASCII comparison.
    static func equalsIgnoringCase(_ lhs: some StringProtocol, _ rhs: some StringProtocol) -> Bool {
        lowercased(lhs) == lowercased(rhs)
    }

    /// The text with leading and trailing ASCII spaces and tabs removed.
    static func trimmed(_ text: some StringProtocol) -> String {
        let bytes = Array(text.utf8)
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
              let last = bytes.lastIndex(where: { $0 != 0x20 && $0 != 0x09 })
        else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
