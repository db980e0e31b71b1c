/// Checked big-endian reads and unchecked-by-design appends on byte arrays, shared by the STUN
/// codec. Every read returns nil instead of trapping when the bytes are not there, because every
/// byte the parser reads came from the network.
extension Array where Element == UInt8 {
    func stunUInt16(at offset: Int) -> UInt16? {
        guard offset >= 0, offset <= count &- 2 else { return nil }
        return UInt16(self[offset]) << 8 | UInt16(self[offset &+ 1])
    }

    func stunUInt32(at offset: Int) -> UInt32? {
        guard let high = stunUInt16(at: offset), let low = stunUInt16(at: offset &+ 2) else { return nil }
        return UInt32(high) << 16 | UInt32(low)
    }

    func stunUInt64(at offset: Int) -> UInt64? {
        guard let high = stunUInt32(at: offset), let low = stunUInt32(at: offset &+ 4) else { return nil }
        return UInt64(high) << 32 | UInt64(low)
    }

    mutating func appendBigEndian(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    mutating func appendBigEndian(_ value: UInt32) {
        appendBigEndian(UInt16(truncatingIfNeeded: value >> 16))
        appendBigEndian(UInt16(truncatingIfNeeded: value))
    }

    mutating func appendBigEndian(_ value: UInt64) {
        appendBigEndian(UInt32(truncatingIfNeeded: value >> 32))
        appendBigEndian(UInt32(truncatingIfNeeded: value))
    }

    /// Overwrites two bytes the builder itself wrote earlier (a length field); never peer input.
    mutating func overwriteBigEndian(_ value: UInt16, at offset: Int) {
        self[offset] = UInt8(truncatingIfNeeded: value >> 8)
        self[offset + 1] = UInt8(truncatingIfNeeded: value)
    }
}

extension UnsafeRawBufferPointer {
    /// Checked big-endian read for the zero-copy peeking helpers; nil past the end.
    func stunUInt16(at offset: Int) -> UInt16? {
        guard offset >= 0, offset <= count &- 2 else { return nil }
        return UInt16(self[offset]) << 8 | UInt16(self[offset &+ 1])
    }

    func stunUInt32(at offset: Int) -> UInt32? {
        guard let high = stunUInt16(at: offset), let low = stunUInt16(at: offset &+ 2) else { return nil }
        return UInt32(high) << 16 | UInt32(low)
    }
}
