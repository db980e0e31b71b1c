import ChorusCore

/// An RTCP source description, SDES (RFC 3550 §6.5): for each of up to 31 sources, a chunk of
/// items (CNAME, NAME, TOOL, …) ended by 1–4 null bytes that pad the chunk to 32 bits.
///
/// ```
/// |V=2|P|    SC   |  PT=SDES=202  |             length            |
/// |                          SSRC/CSRC_1                          |
/// |    type (8)   |   length (8)  |  text (length bytes) ...      |
/// |  ... more items ...  |  0  | null padding to 32 bits          |
/// |                          SSRC/CSRC_2 ...                      |
/// ```
///
/// Every compound Chorus sends carries its CNAME here (RFC 3550 §6.1); receivers read a
/// client's CNAME to group its streams. Parsed chunks and items are views into the datagram.
public struct SourceDescription: Sendable, Equatable {
    public static let maximumChunks = 31

    /// An SDES item type (RFC 3550 §6.5); unknown values are kept.
    public struct ItemType: RawRepresentable, Hashable, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        public static let cname = ItemType(rawValue: 1)
        public static let name = ItemType(rawValue: 2)
        public static let email = ItemType(rawValue: 3)
        public static let phone = ItemType(rawValue: 4)
        public static let location = ItemType(rawValue: 5)
        public static let tool = ItemType(rawValue: 6)
        public static let note = ItemType(rawValue: 7)
        public static let priv = ItemType(rawValue: 8)
    }

    /// One item: type and UTF-8 text (not NUL-terminated).
    public struct Item: Sendable, Equatable {
        public let type: ItemType
        public let text: ArraySlice<UInt8>

        /// nil when `text` is longer than the 8-bit length field allows.
        public init?(type: ItemType, text: String) {
            guard text.utf8.count <= 255, type.rawValue != 0 else { return nil }
            self.type = type
            self.text = Array(text.utf8)[...]
        }

        init(type: ItemType, bytes: ArraySlice<UInt8>) {
            self.type = type
            text = bytes
        }

        public var string: String? { String(validating: text, as: UTF8.self) }
    }

    /// One source's chunk: its SSRC or CSRC and its items in wire form.
    public struct Chunk: Sendable, Equatable, Sequence {
        public let source: SSRC
        /// The encoded items, without the terminating null bytes.
        public let itemBytes: ArraySlice<UInt8>

        public init(source: SSRC, items: [Item]) {
            var bytes: [UInt8] = []
            for item in items {
                bytes.append(item.type.rawValue)
                bytes.append(UInt8(item.text.count))
                bytes.append(contentsOf: item.text)
            }
            self.init(source: source, itemBytes: bytes[...])
        }

        /// A chunk with just a CNAME; nil when the CNAME exceeds 255 bytes.
        public init?(source: SSRC, cname: String) {
            guard let item = Item(type: .cname, text: cname) else { return nil }
            self.init(source: source, items: [item])
        }

        init(source: SSRC, itemBytes: ArraySlice<UInt8>) {
            self.source = source
            self.itemBytes = itemBytes
        }

        /// The first CNAME item's text.
        public var cname: String? { first { $0.type == .cname }?.string }

        /// Bytes on the wire: SSRC, items, 1–4 null bytes.
        var encodedLength: Int { 4 + (itemBytes.count / 4 + 1) * 4 }

        public func makeIterator() -> Iterator { Iterator(bytes: itemBytes) }

        /// Walks the items of a chunk; the parser has checked that they fit.
        public struct Iterator: IteratorProtocol {
            let bytes: ArraySlice<UInt8>
            var offset = 0

            public mutating func next() -> Item? {
                guard offset + 2 <= bytes.count else { return nil }
                let type = bytes.byte(at: offset)
                let length = Int(bytes.byte(at: offset + 1))
                guard type != 0, offset + 2 + length <= bytes.count else { return nil }
                defer { offset += 2 + length }
                return Item(type: ItemType(rawValue: type), bytes: bytes.bytes(at: offset + 2, count: length))
            }
        }
    }

    /// The chunks in wire form and their number (SC).
    public let chunkBytes: ArraySlice<UInt8>
    public let chunkCount: Int

    /// nil with more than 31 chunks.
    public init?(chunks: [Chunk]) {
        guard chunks.count <= Self.maximumChunks else { return nil }
        var bytes: [UInt8] = []
        for chunk in chunks {
            chunk.source.encode(appendingTo: &bytes)
            bytes.append(contentsOf: chunk.itemBytes)
            bytes.append(contentsOf: repeatElement(0, count: chunk.encodedLength - 4 - chunk.itemBytes.count))
        }
        chunkBytes = bytes[...]
        chunkCount = chunks.count
    }

    /// The common case: one source and its CNAME. nil when the CNAME exceeds 255 bytes.
    public init?(source: SSRC, cname: String) {
        guard let chunk = Chunk(source: source, cname: cname) else { return nil }
        self.init(chunks: [chunk])
    }

    /// `packet` holds exactly one SDES packet.
    public init(parsing packet: ArraySlice<UInt8>) throws(RTCPParseError) {
        let frame = try RTCPPacketFrame(packet, type: .sourceDescription)
        var offset = 0
        for _ in 0..<Int(frame.header.count) {
            offset = try Self.endOfChunk(frame.body, at: offset).end
        }
        guard offset == frame.body.count else { throw .malformedBody }
        chunkBytes = frame.body
        chunkCount = Int(frame.header.count)
    }

    public init(parsing packet: [UInt8]) throws(RTCPParseError) {
        try self.init(parsing: packet[...])
    }

    /// The chunks, decoded one by one from `chunkBytes` without allocating.
    public var chunks: Chunks { Chunks(bytes: chunkBytes, count: chunkCount) }

    /// The chunks of one SDES packet, walked in place.
    public struct Chunks: Sequence, Sendable {
        let bytes: ArraySlice<UInt8>
        public let count: Int

        public func makeIterator() -> Iterator { Iterator(bytes: bytes, remaining: count) }

        /// Finds each chunk's end from its items; stops early only on bytes the parser refused.
        public struct Iterator: IteratorProtocol {
            let bytes: ArraySlice<UInt8>
            var remaining: Int
            var offset = 0

            public mutating func next() -> Chunk? {
                guard remaining > 0, let bounds = try? SourceDescription.endOfChunk(bytes, at: offset) else {
                    return nil
                }
                let chunk = Chunk(source: SSRC(bytes.uint32(at: offset)),
                                  itemBytes: bytes.bytes(at: offset + 4, count: bounds.itemsEnd - offset - 4))
                offset = bounds.end
                remaining -= 1
                return chunk
            }
        }
    }

    /// The CNAME given for `source`, if any.
    public func cname(of source: SSRC) -> String? {
        chunks.first { $0.source == source }?.cname
    }

    public func serialize(into out: inout [UInt8]) throws(RTCPSerializationError) {
        guard chunkCount <= Self.maximumChunks else {
            throw .tooManyItems(count: chunkCount, limit: Self.maximumChunks)
        }
        guard chunkBytes.count % 4 == 0 else { throw .notWordAligned(chunkBytes.count) }
        try out.appendRTCPPacket(type: .sourceDescription, count: UInt8(chunkCount), bodyLength: chunkBytes.count) {
            writer in writer.put(contentsOf: chunkBytes)
        }
    }

    /// Where the items of the chunk at `offset` end (its first null byte) and where the chunk
    /// ends (the next 32-bit boundary after that byte). Offsets are relative to the body, which
    /// starts on a 32-bit boundary.
    static func endOfChunk(_ body: ArraySlice<UInt8>, at start: Int) throws(RTCPParseError)
        -> (itemsEnd: Int, end: Int)
    {
        guard start + 4 <= body.count else { throw .malformedBody }
        var offset = start + 4
        while true {
            guard offset < body.count else { throw .malformedBody }  // no terminating null
            if body.byte(at: offset) == 0 { break }
            guard offset + 2 <= body.count else { throw .malformedBody }
            offset += 2 + Int(body.byte(at: offset + 1))
        }
        let end = (offset / 4 + 1) * 4
        guard end <= body.count else { throw .malformedBody }
        return (offset, end)
    }
}
