import COpenSSL

/// Message digests, HMAC and randomness over OpenSSL's EVP interface. OpenSSL is linked anyway
/// for DTLS, so Chorus does not pull in swift-crypto for these few primitives.
public enum Digest {
    /// SHA-1 (used only by the Sinch registration signature scheme).
    public static func sha1(_ data: some Collection<UInt8>) -> [UInt8] { digest(EVP_sha1(), data) }
    /// SHA-256.
    public static func sha256(_ data: some Collection<UInt8>) -> [UInt8] { digest(EVP_sha256(), data) }
    /// MD5 (used only for the Content-MD5 header of signed application requests).
    public static func md5(_ data: some Collection<UInt8>) -> [UInt8] { digest(EVP_md5(), data) }

    /// HMAC-SHA256 of `data` under `key`.
    public static func hmacSHA256(key: some Collection<UInt8>, data: some Collection<UInt8>) -> [UInt8] {
        let key = Array(key)
        // HMAC needs a valid pointer even for an empty key: pass a 1-byte buffer with length 0.
        let keyBuffer = key.isEmpty ? [0] : key
        let data = Array(data)
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = keyBuffer.withUnsafeBufferPointer { k in
            data.withUnsafeBufferPointer { d in
                HMAC(EVP_sha256(), k.baseAddress, Int32(key.count), d.baseAddress, d.count, &out, &length)
            }
        }
        precondition(ok != nil, "HMAC-SHA256 failed inside OpenSSL")
        return Array(out.prefix(Int(length)))
    }

    private static func digest(_ md: OpaquePointer?, _ data: some Collection<UInt8>) -> [UInt8] {
        let data = Array(data)
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = data.withUnsafeBufferPointer { d in
            EVP_Digest(d.baseAddress, d.count, &out, &length, md, nil)
        }
        precondition(ok == 1, "EVP_Digest failed inside OpenSSL")
        return Array(out.prefix(Int(length)))
    }
}

/// Cryptographically secure random bytes from OpenSSL's DRBG.
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let ok = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
        precondition(ok == 1, "RAND_bytes failed: the system has no entropy source")
        return out
    }
}

/// Comparison whose running time does not depend on where the inputs first differ, so that a
/// remote client cannot learn a valid signature byte by byte from response times.
public func constantTimeEquals(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
    let a = Array(a)
    let b = Array(b)
    guard a.count == b.count else { return false }
    return a.withUnsafeBufferPointer { pa in
        b.withUnsafeBufferPointer { pb in
            CRYPTO_memcmp(pa.baseAddress, pb.baseAddress, pa.count) == 0
        }
    }
}
