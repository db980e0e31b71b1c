import COpenSSL

/// The server's DTLS identity: an ECDSA P-256 key and a self-signed X.509 certificate, with
/// its SHA-256 fingerprint for SDP (`a=fingerprint:sha-256 AB:CD:…`, RFC 8122). One per process
/// (or per test peer); shared read-only by every connection's SSL_CTX.
///
/// `@unchecked Sendable`: its `OpaquePointer`s are set in `init` and only read after (OpenSSL reads are thread-safe).
public final class DTLSCertificate: @unchecked Sendable {
    let key: OpaquePointer
    let certificate: OpaquePointer
    /// SHA-256 of the DER certificate.
    public let fingerprint: [UInt8]

    /// Generates a fresh key and a certificate valid for 30 days (WebRTC identities are
    /// ephemeral; browsers do the same).
    public init(commonName: String = "chorus") throws(DTLSError) {
        guard let key = chorus_generate_p256_key() else { throw .openSSL("P-256 key generation") }
        guard let x509 = X509_new() else {
            EVP_PKEY_free(key)
            throw .openSSL("X509_new")
        }
        self.key = key
        self.certificate = x509
        let serial = SecureBytes.random(8).reduce(0) { $0 << 8 | Int($1 & 0x7F) }
        X509_set_version(x509, 2)
        ASN1_INTEGER_set(X509_get_serialNumber(x509), serial)
        X509_gmtime_adj(X509_getm_notBefore(x509), -86_400)
        X509_gmtime_adj(X509_getm_notAfter(x509), 30 * 86_400)
        X509_set_pubkey(x509, key)
        let name = X509_get_subject_name(x509)
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, commonName, -1, -1, 0)
        X509_set_issuer_name(x509, name)
        guard X509_sign(x509, key, EVP_sha256()) > 0 else { throw .openSSL("X509_sign") }
        guard let digest = Self.digest(of: x509, algorithm: .sha256) else { throw .openSSL("X509_digest") }
        fingerprint = digest
    }

    deinit {
        X509_free(certificate)
        EVP_PKEY_free(key)
    }

    /// `sha-256 AB:CD:…` as SDP writes it.
    public var sdpFingerprint: String { "sha-256 " + DTLSFingerprint.hexWithColons(fingerprint) }

    static func digest(of x509: OpaquePointer, algorithm: DTLSFingerprint.Algorithm) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let md: OpaquePointer?
        switch algorithm {
        case .sha256: md = EVP_sha256()
        case .sha384: md = EVP_sha384()
        case .sha512: md = EVP_sha512()
        case .sha1: md = EVP_sha1()
        }
        guard X509_digest(x509, md, &out, &length) == 1 else { return nil }
        return Array(out.prefix(Int(length)))
    }
}

/// A certificate fingerprint from SDP (RFC 8122 §5): hash function and digest bytes.
public struct DTLSFingerprint: Equatable, Sendable {
    public enum Algorithm: String, Sendable {
        case sha1 = "sha-1", sha256 = "sha-256", sha384 = "sha-384", sha512 = "sha-512"
    }

    public let algorithm: Algorithm
    public let digest: [UInt8]

    public init(algorithm: Algorithm, digest: [UInt8]) {
        self.algorithm = algorithm
        self.digest = digest
    }

    /// Parses `sha-256` and `AB:CD:…`; nil for unknown hashes or malformed hex.
    public init?(algorithm name: String, hex: String) {
        guard let algorithm = Algorithm(rawValue: name.lowercased()) else { return nil }
        var bytes: [UInt8] = []
        for part in hex.split(separator: ":", omittingEmptySubsequences: false) {
            guard part.utf8.count == 2, let byte = UInt8(part, radix: 16) else { return nil }
            bytes.append(byte)
        }
        guard !bytes.isEmpty, bytes.count <= 64 else { return nil }
        self.init(algorithm: algorithm, digest: bytes)
    }

    static func hexWithColons(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for (index, byte) in bytes.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ":")) }
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

enum SecureBytes {
    static func random(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        _ = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        return out
    }
}

/// Why DTLS failed; the transport ends the call `failed` with this as detail.
public enum DTLSError: Error, Equatable, Sendable {
    case openSSL(String)
    case handshakeFailed(String)
    case fingerprintMismatch
    case noSRTPProfile
}
