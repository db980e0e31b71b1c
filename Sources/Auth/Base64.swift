import Foundation

/// Base64 (RFC 4648 §4) and base64url without padding (RFC 4648 §5, as JWTs use it).
public enum Base64 {
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        Data(bytes).base64EncodedString()
    }

    /// Decodes standard Base64 with padding; nil for anything else.
    public static func decode(_ text: String) -> [UInt8]? {
        Data(base64Encoded: text).map { Array($0) }
    }

    public static func urlEncode(_ bytes: some Collection<UInt8>) -> String {
        var text = encode(bytes)
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// Decodes unpadded base64url; nil when the text has characters outside that alphabet.
    public static func urlDecode(_ text: some StringProtocol) -> [UInt8]? {
        guard text.utf8.allSatisfy({ byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                return true
            default:
                return false
            }
        }) else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        let remainder = standard.utf8.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 { standard += String(repeating: "=", count: 4 - remainder) }
        return decode(standard)
    }
}
