import COpenSSL

/// MESSAGE-INTEGRITY (RFC 8489 §14.5): an HMAC-SHA1 over the message up to, but excluding, this
/// attribute, computed as if the header's length field already ended just after it (so that a
/// FINGERPRINT appended later does not change the HMAC). With the short-term credential
/// mechanism that ICE uses (RFC 8489 §9.1.1) the key is the password itself, after the PRECIS
/// OpaqueString profile; ICE passwords are `ice-char` ASCII (RFC 8839 §5.4), for which the
/// profile changes nothing, so the key is the password's UTF-8 bytes.
public enum MessageIntegrity {
    /// An HMAC-SHA1 is 20 bytes.
    public static let valueLength = 20
    /// The attribute on the wire: 4 header bytes and the HMAC.
    static let attributeLength = 24

    /// The short-term credential key for `password` (RFC 8489 §9.1.1).
    public static func shortTermKey(password: String) -> [UInt8] { Array(password.utf8) }

    /// HMAC-SHA1 of `message` under `key`, written into `output` (at least 20 bytes).
    static func hmacSHA1(key: [UInt8], message: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        // HMAC needs a valid key pointer even for an empty key: hand it one byte and length 0.
        let keyBuffer = key.isEmpty ? [0] : key
        var length: UInt32 = 0
        let data = message.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let mac = output.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let ok = keyBuffer.withUnsafeBufferPointer { k in
            HMAC(EVP_sha1(), k.baseAddress, Int32(clamping: key.count), data, message.count, mac, &length)
        }
        // Not peer input: OpenSSL fails here only when it cannot allocate.
        precondition(ok != nil && length == UInt32(valueLength), "HMAC-SHA1 failed inside OpenSSL")
    }
}

extension STUNMessage {
    /// True when the message carries MESSAGE-INTEGRITY and its HMAC matches `key`. The
    /// comparison takes the same time wherever the bytes differ, so a peer cannot learn a valid
    /// HMAC byte by byte. Allocates nothing for messages up to a few kilobytes.
    public func hasValidMessageIntegrity(key: [UInt8]) -> Bool {
        guard let offset = index.messageIntegrity, offset >= STUNMessage.headerLength,
              offset &+ MessageIntegrity.attributeLength <= bytes.count else { return false }
        // RFC 8489 §14.5: the length field must cover the message up to the end of this
        // attribute; a FINGERPRINT after it is left out. Hash a copy with the length patched.
        let adjustedLength = offset &+ MessageIntegrity.attributeLength &- STUNMessage.headerLength
        return withUnsafeTemporaryAllocation(byteCount: offset &+ 64, alignment: 8) { scratch in
            let prefix = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<offset])
            let mac = UnsafeMutableRawBufferPointer(rebasing: scratch[offset..<(offset &+ 64)])
            bytes.withUnsafeBytes { prefix.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<offset])) }
            prefix[2] = UInt8(truncatingIfNeeded: adjustedLength >> 8)
            prefix[3] = UInt8(truncatingIfNeeded: adjustedLength)
            MessageIntegrity.hmacSHA1(key: key, message: UnsafeRawBufferPointer(prefix), into: mac)
            return bytes.withUnsafeBytes { received in
                CRYPTO_memcmp(mac.baseAddress, received.baseAddress.map { $0 + offset + 4 },
                              MessageIntegrity.valueLength) == 0
            }
        }
    }

    /// True when MESSAGE-INTEGRITY is present (whether or not it is valid).
    public var hasMessageIntegrity: Bool { index.messageIntegrity != nil }
}

extension STUNMessageBuilder {
    /// Appends MESSAGE-INTEGRITY over everything written so far under `key` (RFC 8489 §14.5).
    /// Append it after every other attribute except FINGERPRINT.
    public mutating func appendMessageIntegrity(key: [UInt8]) {
        let start = bytes.count
        // The HMAC covers a length field that already includes this attribute.
        setLengthField(to: start &+ MessageIntegrity.attributeLength &- STUNMessage.headerLength)
        appendAttributeHeader(.messageIntegrity, length: MessageIntegrity.valueLength)
        bytes.append(contentsOf: repeatElement(0, count: MessageIntegrity.valueLength))
        bytes.withUnsafeMutableBytes { all in
            let covered = UnsafeRawBufferPointer(rebasing: all[0..<start])
            let mac = UnsafeMutableRawBufferPointer(rebasing: all[(start + 4)...])
            MessageIntegrity.hmacSHA1(key: key, message: covered, into: mac)
        }
        appendPadding(valueLength: MessageIntegrity.valueLength)
    }
}
