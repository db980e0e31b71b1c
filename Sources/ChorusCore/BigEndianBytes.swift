// Big-endian reads from byte arrays and slices, appends to arrays, and checked writes into raw
// buffers: the one set every target uses (RTP, RTCP, SRTP, the mixer's RTP writer, the
// forwarder, the fuzz harnesses). Every slice read takes an offset relative to the slice's
// start, every array read an absolute one; callers check lengths before reading, and Swift's own
// bounds checks back that up, so a parser bug shows up as a test failure, never as a wild read.

extension ArraySlice where Element == UInt8 {
    @inlinable
    public func byte(at offset: Int) -> UInt8 {
        self[startIndex + offset]
    }

    @inlinable
    public func uint16(at offset: Int) -> UInt16 {
        UInt16(self[startIndex + offset]) << 8 | UInt16(self[startIndex + offset + 1])
    }

    @inlinable
    public func uint24(at offset: Int) -> UInt32 {
        UInt32(self[startIndex + offset]) << 16 | UInt32(self[startIndex + offset + 1]) << 8
            | UInt32(self[startIndex + offset + 2])
    }

    @inlinable
    public func uint32(at offset: Int) -> UInt32 {
        UInt32(uint16(at: offset)) << 16 | UInt32(uint16(at: offset + 2))
    }

    /// The sub-slice `offset ..< offset + count`, in relative offsets.
    @inlinable
    public func bytes(at offset: Int, count: Int) -> ArraySlice<UInt8> {
        self[(startIndex + offset)..<(startIndex + offset + count)]
    }
}

/// Writes big-endian fields into a raw buffer whose size the serializer computed beforehand.
/// Overrunning it is a serializer bug, not a peer's doing, hence the preconditions.
public struct ByteWriter {
    public let buffer: UnsafeMutableRawBufferPointer
    public var offset = 0

    @inlinable
    public init(_ buffer: UnsafeMutableRawBufferPointer) {
        self.buffer = buffer
    }

    @inlinable
    public mutating func put(_ byte: UInt8) {
        precondition(offset < buffer.count, "serializer size computation is wrong")
        buffer[offset] = byte
        offset += 1
    }

    @inlinable
    public mutating func put16(_ value: UInt16) {
        put(UInt8(truncatingIfNeeded: value >> 8))
        put(UInt8(truncatingIfNeeded: value))
    }

    @inlinable
    public mutating func put24(_ value: UInt32) {
        put(UInt8(truncatingIfNeeded: value >> 16))
        put16(UInt16(truncatingIfNeeded: value))
    }

    @inlinable
    public mutating func put32(_ value: UInt32) {
        put16(UInt16(truncatingIfNeeded: value >> 16))
        put16(UInt16(truncatingIfNeeded: value))
    }

    @inlinable
    public mutating func put<Bytes: Sequence>(contentsOf bytes: Bytes) where Bytes.Element == UInt8 {
        for byte in bytes { put(byte) }
    }

    @inlinable
    public mutating func putZeros(_ count: Int) {
        for _ in 0..<max(count, 0) { put(0) }
    }
}

extension Array where Element == UInt8 {
    /// Appends exactly `count` bytes produced by `body`, without reallocating when the array
    /// already has the capacity (callers reuse one buffer per stream).
    @inlinable
    public mutating func appendWriting(count: Int, _ body: (inout ByteWriter) -> Void) {
        let start = self.count
        append(contentsOf: repeatElement(0, count: count))
        withUnsafeMutableBytes { raw in
            var writer = ByteWriter(UnsafeMutableRawBufferPointer(rebasing: raw[start...]))
            body(&writer)
            precondition(writer.offset == count, "serializer wrote \(writer.offset) of \(count) bytes")
        }
    }
}

extension Array where Element == UInt8 {
    /// The slice reads, on the whole array (its offsets are then absolute).
    @inlinable
    public func uint16(at offset: Int) -> UInt16 { self[...].uint16(at: offset) }

    @inlinable
    public func uint32(at offset: Int) -> UInt32 { self[...].uint32(at: offset) }

    /// Appends `value` in network byte order.
    @inlinable
    public mutating func append16(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    /// Appends `value` in network byte order.
    @inlinable
    public mutating func append32(_ value: UInt32) {
        append16(UInt16(truncatingIfNeeded: value >> 16))
        append16(UInt16(truncatingIfNeeded: value))
    }
}
