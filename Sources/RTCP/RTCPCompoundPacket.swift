import ChorusCore

/// A compound RTCP packet (RFC 3550 §6.1): one datagram (after SRTCP unprotect) holding one or
/// more RTCP packets back to back. Construction runs the header validity checks of RFC 3550
/// §A.2 — version 2 everywhere, lengths that add up to the datagram exactly, padding counts
/// that fit — without decoding bodies; iteration then yields each packet as an `RTCPPacket`.
///
/// The first packet must be SR or RR under `.rfc3550`. `.reducedSize` (the default) follows
/// RFC 5506 §3.4.2: any defined RTCP type (200–207) may come first, so a lone NACK, PLI or
/// transport-cc message is accepted, as browsers send with `a=rtcp-rsize`. Nothing is
/// allocated; the packets are slices of the datagram.
public struct RTCPCompoundPacket: Sequence, Sendable, Equatable {
    /// How strict the first-packet rule is.
    public enum Validation: Sendable {
        /// RFC 3550 §A.2: first packet SR or RR, unpadded.
        case rfc3550
        /// RFC 5506: first packet of any defined type (200–207), unpadded.
        case reducedSize
    }

    public let bytes: ArraySlice<UInt8>
    /// Number of RTCP packets in the compound.
    public let count: Int

    public init(parsing bytes: ArraySlice<UInt8>, validation: Validation = .reducedSize) throws(RTCPParseError) {
        let first = try RTCPHeader(parsing: bytes)
        switch validation {
        case .rfc3550:
            guard first.packetType == .senderReport || first.packetType == .receiverReport else {
                throw .invalidFirstPacket(first.packetType)
            }
        case .reducedSize:
            guard (200...207).contains(first.packetType.rawValue) else { throw .invalidFirstPacket(first.packetType) }
        }
        // §A.2: "padding should only be applied, if it is needed, to the last packet".
        guard !first.hasPadding || first.packetLength == bytes.count else {
            throw .invalidFirstPacket(first.packetType)
        }
        var offset = 0
        var count = 0
        while offset < bytes.count {
            let header = try RTCPHeader(parsing: bytes.bytes(at: offset, count: bytes.count - offset))
            guard offset + header.packetLength <= bytes.count else { throw .truncated }
            if header.hasPadding {
                let padding = Int(bytes.byte(at: offset + header.packetLength - 1))
                guard padding >= 1, padding <= header.packetLength - RTCPHeader.length else { throw .invalidPadding }
            }
            offset += header.packetLength
            count += 1
        }
        self.bytes = bytes
        self.count = count
    }

    public init(parsing bytes: [UInt8], validation: Validation = .reducedSize) throws(RTCPParseError) {
        try self.init(parsing: bytes[...], validation: validation)
    }

    public func makeIterator() -> Iterator { Iterator(bytes: bytes) }

    public var underestimatedCount: Int { count }

    /// The packets as unparsed slices, each exactly one RTCP packet (e.g. to forward as is).
    public var packetSlices: PacketSlices { PacketSlices(bytes: bytes) }

    /// Yields each packet decoded; bodies that fail to parse come out as `.malformed`.
    public struct Iterator: IteratorProtocol {
        var slices: PacketSlices.Iterator

        init(bytes: ArraySlice<UInt8>) {
            slices = PacketSlices.Iterator(bytes: bytes)
        }

        public mutating func next() -> RTCPPacket? {
            guard let packet = slices.next() else { return nil }
            do {
                return try RTCPPacket(parsing: packet)
            } catch {
                let type = RTCPPacketType(rawValue: packet.byte(at: 1))
                return .malformed(type: type, format: packet.byte(at: 0) & 0x1F, error: error)
            }
        }
    }

    /// The packets of the compound as slices, split by their length fields.
    public struct PacketSlices: Sequence, Sendable {
        let bytes: ArraySlice<UInt8>

        public func makeIterator() -> Iterator { Iterator(bytes: bytes) }

        /// Cuts the next packet by its length field.
        public struct Iterator: IteratorProtocol {
            let bytes: ArraySlice<UInt8>
            var offset = 0

            public mutating func next() -> ArraySlice<UInt8>? {
                // Validated at construction; the guards only keep iteration total.
                guard offset + RTCPHeader.length <= bytes.count else { return nil }
                let length = (Int(bytes.uint16(at: offset + 2)) + 1) * 4
                guard offset + length <= bytes.count else { return nil }
                defer { offset += length }
                return bytes.bytes(at: offset, count: length)
            }
        }
    }
}
