import ChorusCore

/// A Generic NACK (RFC 4585 §6.2.1): transport-layer feedback (PT=205, FMT=1) listing lost RTP
/// packets of one media source. Each FCI entry names a packet ID (PID) and a bitmask of the 16
/// packets after it (BLP): bit i set means PID+i+1 is lost too.
///
/// ```
/// |            PID                |             BLP               |   × n ≥ 1
/// ```
///
/// Chorus answers NACKs from clients out of its retransmission cache, and builds NACKs for
/// holes it sees on incoming video with `init(senderSSRC:mediaSSRC:lostSequenceNumbers:)`.
public struct GenericNACK: Sendable, Equatable {
    public static let format: UInt8 = 1

    /// One PID + BLP entry; iterating it yields the lost sequence numbers it names, in order.
    public struct Item: RTCPFixedSizeItem, Hashable, Sequence {
        public static var encodedLength: Int { 4 }

        public var packetID: UInt16
        /// BLP: bit i (least significant first) marks PID+i+1 as lost.
        public var lostPacketBitmask: UInt16

        public init(packetID: UInt16, lostPacketBitmask: UInt16 = 0) {
            self.packetID = packetID
            self.lostPacketBitmask = lostPacketBitmask
        }

        public init(decoding bytes: ArraySlice<UInt8>) {
            packetID = bytes.uint16(at: 0)
            lostPacketBitmask = bytes.uint16(at: 2)
        }

        public func encode(appendingTo bytes: inout [UInt8]) {
            bytes.appendWriting(count: 4) { writer in
                writer.put16(packetID)
                writer.put16(lostPacketBitmask)
            }
        }

        public func makeIterator() -> Iterator { Iterator(item: self) }

        /// PID first, then one number per set BLP bit; sequence numbers wrap modulo 2^16.
        public struct Iterator: IteratorProtocol {
            let item: Item
            var bit = -1

            public mutating func next() -> UInt16? {
                if bit < 0 {
                    bit = 0
                    return item.packetID
                }
                while bit < 16 {
                    defer { bit += 1 }
                    if item.lostPacketBitmask & (1 << UInt16(bit)) != 0 {
                        return item.packetID &+ UInt16(bit + 1)
                    }
                }
                return nil
            }
        }
    }

    public var senderSSRC: SSRC
    public var mediaSSRC: SSRC
    public var items: RTCPItemList<Item>

    public init(senderSSRC: SSRC, mediaSSRC: SSRC, items: RTCPItemList<Item>) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.items = items
    }

    /// Packs `lostSequenceNumbers`, given in sending order (ascending modulo 2^16), into as few
    /// entries as that order allows: a number within the 16 after the current entry's PID sets
    /// a BLP bit, anything else starts a new entry. Repeats are absorbed.
    public init(senderSSRC: SSRC, mediaSSRC: SSRC, lostSequenceNumbers: some Sequence<UInt16>) {
        var entries: [Item] = []
        for number in lostSequenceNumbers {
            if var last = entries.last {
                let distance = number &- last.packetID
                if distance == 0 { continue }
                if distance <= 16 {
                    last.lostPacketBitmask |= 1 << (distance - 1)
                    entries[entries.count - 1] = last
                    continue
                }
            }
            entries.append(Item(packetID: number))
        }
        self.init(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, items: RTCPItemList(entries))
    }

    /// Every lost sequence number named by the entries, in order, without allocating.
    public var lostSequenceNumbers: FlattenSequence<RTCPItemList<Item>> { items.joined() }

    /// `packet` holds exactly one Generic NACK.
    public init(parsing packet: ArraySlice<UInt8>) throws(RTCPParseError) {
        let frame = try FeedbackFrame(packet, type: .transportLayerFeedback, format: Self.format)
        // "The FCI field MUST contain at least one and MAY contain more than one Generic NACK."
        guard !frame.fci.isEmpty, frame.fci.count % Item.encodedLength == 0 else { throw .malformedBody }
        senderSSRC = frame.senderSSRC
        mediaSSRC = frame.mediaSSRC
        items = RTCPItemList(wire: frame.fci)
    }

    public init(parsing packet: [UInt8]) throws(RTCPParseError) {
        try self.init(parsing: packet[...])
    }

    public func serialize(into out: inout [UInt8]) throws(RTCPSerializationError) {
        guard !items.isEmpty else { throw .empty }
        try out.appendFeedback(
            type: .transportLayerFeedback, format: Self.format, senderSSRC: senderSSRC, mediaSSRC: mediaSSRC,
            fciLength: items.bytes.count
        ) { writer in writer.put(contentsOf: items.bytes) }
    }
}
