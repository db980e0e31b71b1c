/// FINGERPRINT (RFC 8489 §14.7): the CRC-32 of the message up to, but excluding, this attribute,
/// XOR'ed with 0x5354554e ("STUN"). It lets a receiver that multiplexes STUN with other
/// protocols on one port tell a STUN message from something that merely looks like one. It must
/// be the last attribute, so the header's length field, as received, already covers it.
public enum Fingerprint {
    public static let xorValue: UInt32 = 0x5354_554E
    static let valueLength = 4
    static let attributeLength = 8

    /// CRC-32 in the ISO-HDLC variant (ITU-T V.42, the one in zlib and Ethernet): reflected
    /// polynomial 0xEDB88320, initial value and final XOR 0xFFFFFFFF. Check value of "123456789"
    /// is 0xCBF43926.
    public static func crc32(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
        }
        return crc ^ 0xFFFF_FFFF
    }

    /// CRC-32 of an array (see `crc32(_:UnsafeRawBufferPointer)`).
    public static func crc32(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { crc32($0) }
    }

    /// The FINGERPRINT value for a message whose bytes before the attribute are `prefix`.
    static func value(ofPrefix prefix: UnsafeRawBufferPointer) -> UInt32 {
        crc32(prefix) ^ xorValue
    }

    /// One entry per byte value: the CRC of that byte, computed once at first use.
    private static let table: [UInt32] = (0..<256).map { (index: UInt32) -> UInt32 in
        var entry = index
        for _ in 0..<8 {
            entry = entry & 1 == 1 ? (entry >> 1) ^ 0xEDB8_8320 : entry >> 1
        }
        return entry
    }
}

extension STUNMessage {
    /// True when the message ends with FINGERPRINT (the parser guarantees it is last).
    public var hasFingerprint: Bool { index.fingerprint != nil }

    /// nil when there is no FINGERPRINT; otherwise whether its CRC matches the message.
    public var fingerprintIsValid: Bool? {
        guard let offset = index.fingerprint else { return nil }
        guard let received = bytes.stunUInt32(at: offset &+ 4) else { return false }
        let computed = bytes.withUnsafeBytes { all in
            Fingerprint.value(ofPrefix: UnsafeRawBufferPointer(rebasing: all[0..<offset]))
        }
        return computed == received
    }
}

extension STUNMessageBuilder {
    /// Appends FINGERPRINT over everything written so far. It must come last: the builder
    /// refuses any attribute after it.
    public mutating func appendFingerprint() {
        let start = bytes.count
        // The CRC covers a length field that already includes this attribute.
        setLengthField(to: start &+ Fingerprint.attributeLength &- STUNMessage.headerLength)
        let value = bytes.withUnsafeBytes { Fingerprint.value(ofPrefix: $0) }
        appendAttributeHeader(.fingerprint, length: Fingerprint.valueLength)
        bytes.appendBigEndian(value)
        appendPadding(valueLength: Fingerprint.valueLength)
    }
}
