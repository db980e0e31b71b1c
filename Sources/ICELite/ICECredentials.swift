import STUN

/// One side's ICE credentials (RFC 8839 §5.4): the username fragment and password from an
/// `a=ice-ufrag` / `a=ice-pwd` pair. Validated on creation, because the remote pair comes from a
/// peer's SDP and ends up in STUN USERNAME attributes and HMAC keys: a ufrag is 4–256 and a
/// password 22–256 `ice-char`s (`ALPHA / DIGIT / "+" / "/"`), so USERNAME never exceeds 513
/// bytes and a ufrag never contains the ':' that separates the two halves.
public struct ICECredentials: Hashable, Sendable {
    public let ufrag: String
    public let password: String

    public init(ufrag: String, password: String) throws(ICECredentialsError) {
        guard Self.isICEChars(ufrag, count: 4...256) else { throw .invalidUfrag }
        guard Self.isICEChars(password, count: 22...256) else { throw .invalidPassword }
        self.ufrag = ufrag
        self.password = password
    }

    /// Fresh local credentials from OpenSSL's DRBG: an 8-character ufrag (48 bits) and a
    /// 24-character password (144 bits, above RFC 8445 §5.3's 128-bit minimum).
    public static func random() -> ICECredentials {
        // 64 ice-chars: a byte masked to 6 bits picks one without bias.
        let ufrag = STUNRandom.bytes(8).map { iceChars[Int($0 & 63)] }
        let password = STUNRandom.bytes(24).map { iceChars[Int($0 & 63)] }
        // Every character is an ice-char by construction; the fallback is unreachable.
        return (try? ICECredentials(ufrag: String(decoding: ufrag, as: UTF8.self),
                                    password: String(decoding: password, as: UTF8.self)))
            ?? ICECredentials(unchecked: "chorus00", "chorus-password-fallback")
    }

    private init(unchecked ufrag: String, _ password: String) {
        self.ufrag = ufrag
        self.password = password
    }

    static let iceChars: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func isICEChars(_ text: String, count range: ClosedRange<Int>) -> Bool {
        range.contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                return true
            default:
                return false
            }
        }
    }
}

/// Why an `a=ice-ufrag` or `a=ice-pwd` value was refused (RFC 8839 §5.4).
public enum ICECredentialsError: Error, Hashable, Sendable {
    case invalidUfrag
    case invalidPassword
}
