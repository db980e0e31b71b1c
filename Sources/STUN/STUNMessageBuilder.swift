/// Serializes a STUN message (RFC 8489 §5, §14) into one byte array: the header first, then
/// attributes appended in order, keeping the header's length field current after every append.
/// MESSAGE-INTEGRITY and FINGERPRINT are computed in place over what is already written
/// (`appendMessageIntegrity(key:)`, then `appendFingerprint()`), so building a response costs the
/// output array and nothing else.
///
/// Contract: the builder is driven by our own code, not by peer bytes. Appending after
/// FINGERPRINT, or a value or message longer than the 16-bit length fields allow, is a
/// programming error and traps. Peer-derived strings (ICE credentials) are validated before they
/// get here.
public struct STUNMessageBuilder: Sendable {
    public internal(set) var bytes: [UInt8]
    public let type: STUNMessageType
    public let transactionID: TransactionID
    private var hasFingerprint = false

    /// Starts a message with its 20-byte header. `capacity` avoids regrowth for typical sizes.
    public init(type: STUNMessageType, transactionID: TransactionID, capacity: Int = 128) {
        self.type = type
        self.transactionID = transactionID
        bytes = []
        bytes.reserveCapacity(max(capacity, STUNMessage.headerLength))
        bytes.appendBigEndian(type.rawValue)
        bytes.appendBigEndian(UInt16(0))
        bytes.appendBigEndian(STUNMessage.magicCookie)
        bytes.appendBigEndian(transactionID.high)
        bytes.appendBigEndian(transactionID.low)
    }

    /// Appends one TLV attribute, padded with `padding` to a multiple of 4 bytes (RFC 8489 §14
    /// lets padding be any value; zero is the norm, the RFC 5769 vectors use 0x20).
    public mutating func appendAttribute(_ type: STUNAttributeType, value: some Collection<UInt8>, padding: UInt8 = 0) {
        appendAttributeHeader(type, length: value.count)
        bytes.append(contentsOf: value)
        appendPadding(valueLength: value.count, with: padding)
    }

    /// Writes a type and length, leaving the caller to write exactly `length` value bytes and
    /// then call `appendPadding`. Used by attribute encoders to avoid temporary arrays.
    mutating func appendAttributeHeader(_ type: STUNAttributeType, length: Int) {
        precondition(!hasFingerprint, "FINGERPRINT must be the last attribute (RFC 8489 §14.7)")
        precondition(length <= 0xFFFF, "STUN attribute value longer than 65535 bytes")
        bytes.appendBigEndian(type.rawValue)
        bytes.appendBigEndian(UInt16(truncatingIfNeeded: length))
        if type == .fingerprint { hasFingerprint = true }
    }

    /// Pads the value just written and updates the header's length field.
    mutating func appendPadding(valueLength: Int, with padding: UInt8 = 0) {
        let count = STUNAttribute.paddedLength(valueLength) &- valueLength
        for _ in 0..<count { bytes.append(padding) }
        setLengthField(to: bytes.count &- STUNMessage.headerLength)
    }

    /// Writes the header's Message Length (RFC 8489 §5): the size after the header.
    mutating func setLengthField(to length: Int) {
        precondition(length >= 0 && length <= 0xFFFF, "STUN message longer than 65535 bytes")
        bytes.overwriteBigEndian(UInt16(truncatingIfNeeded: length), at: 2)
    }

    /// The finished message.
    public consuming func finish() -> [UInt8] { bytes }
}
