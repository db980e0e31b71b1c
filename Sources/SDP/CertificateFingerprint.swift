/// The `a=fingerprint:<hash function> <hex:hex:…>` attribute (RFC 8122 §5): the digest of the
/// certificate an endpoint will present in the DTLS handshake, which authenticates it.
///
/// An offer may list several (aiortc sends sha-256, sha-384 and sha-512); the DTLS endpoint
/// accepts the certificate when it matches any fingerprint whose hash function it supports.
/// Hash function names are stored lowercased; `value` writes uppercase hex as browsers do.
public struct CertificateFingerprint: Sendable, Hashable, CustomStringConvertible {
    public var hashFunction: String
    public var digest: [UInt8]

    /// Hash functions the DTLS layer (OpenSSL) can verify. MD2 and MD5 are excluded: RFC 8122
    /// §5 forbids them.
    public static let supportedHashFunctions: Set<String> = ["sha-1", "sha-224", "sha-256", "sha-384", "sha-512"]

    public init(hashFunction: String, digest: [UInt8]) {
        self.hashFunction = SDPSyntax.lowercased(hashFunction)
        self.digest = digest
    }

    /// Parses `sha-256 AB:CD:…` (hex digits of either case); nil when the hex is malformed or
    /// its length does not match a known hash function.
    public init?(parsing value: String) {
        let parts = SDPSyntax.fields(value)
        guard parts.count == 2, SDPSyntax.isToken(parts[0]) else { return nil }
        let pairs = SDPSyntax.split(parts[1], at: UInt8(ascii: ":"))
        guard (1...64).contains(pairs.count) else { return nil }
        var digest: [UInt8] = []
        digest.reserveCapacity(pairs.count)
        for pair in pairs {
            let nibbles = pair.utf8.compactMap(SDPSyntax.hexValue)
            guard pair.utf8.count == 2, nibbles.count == 2 else { return nil }
            digest.append(nibbles[0] << 4 | nibbles[1])
        }
        self.init(hashFunction: parts[0], digest: digest)
        if let expected = Self.digestLength(of: hashFunction), expected != digest.count { return nil }
    }

    /// The digest length in bytes of a known hash function, or nil when unknown.
    public static func digestLength(of hashFunction: String) -> Int? {
        switch SDPSyntax.lowercased(hashFunction) {
        case "md2", "md5": return 16
        case "sha-1": return 20
        case "sha-224": return 28
        case "sha-256": return 32
        case "sha-384": return 48
        case "sha-512": return 64
        default: return nil
        }
    }

    /// True when the DTLS layer can verify a certificate against this fingerprint.
    public var isSupported: Bool { Self.supportedHashFunctions.contains(hashFunction) }

    /// The digest as uppercase hex pairs joined by colons.
    public var hexDigest: String {
        let digits = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digest.count * 3)
        for (index, byte) in digest.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ":")) }
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The attribute value, e.g. `sha-256 0D:10:…`.
    public var value: String { hashFunction + " " + hexDigest }

    public var description: String { value }
}
