import ChorusCore

/// A fixed-size record that RTCP messages repeat: report blocks, SSRC lists, NACK items, FIR
/// entries. Conformers decode from exactly `encodedLength` bytes and encode to as many.
public protocol RTCPFixedSizeItem: Sendable, Equatable {
    static var encodedLength: Int { get }
    /// `bytes` holds exactly `encodedLength` bytes; `RTCPItemList` guarantees it.
    init(decoding bytes: ArraySlice<UInt8>)
    func encode(appendingTo bytes: inout [UInt8])
}

/// A list of fixed-size RTCP records kept in wire form. A parsed message's list is a slice of
/// the datagram, decoded item by item on access, so parsing allocates nothing; a list built
/// from values encodes them once, and serializing copies the bytes as they are.
public struct RTCPItemList<Item: RTCPFixedSizeItem>: RandomAccessCollection, Sendable, Equatable,
    ExpressibleByArrayLiteral
{
    /// The items in wire form: `count × Item.encodedLength` bytes.
    public let bytes: ArraySlice<UInt8>

    /// `bytes.count` must be a multiple of `Item.encodedLength`; parsers check before calling.
    init(wire bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
    }

    public init(_ items: some Sequence<Item>) {
        var encoded: [UInt8] = []
        for item in items { item.encode(appendingTo: &encoded) }
        bytes = encoded[...]
    }

    public init(arrayLiteral elements: Item...) {
        self.init(elements)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { bytes.count / Item.encodedLength }

    public subscript(position: Int) -> Item {
        Item(decoding: bytes.bytes(at: position * Item.encodedLength, count: Item.encodedLength))
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.bytes == rhs.bytes }

    /// The list over `count` items at the start of `data`, or nil when `data` is too short.
    static func parse(_ data: ArraySlice<UInt8>, count: Int) -> Self? {
        let length = count * Item.encodedLength
        guard data.count >= length else { return nil }
        return Self(wire: data.bytes(at: 0, count: length))
    }
}

extension SSRC: RTCPFixedSizeItem {
    public static var encodedLength: Int { 4 }

    public init(decoding bytes: ArraySlice<UInt8>) {
        self.init(bytes.uint32(at: 0))
    }

    public func encode(appendingTo bytes: inout [UInt8]) {
        bytes.appendWriting(count: 4) { $0.put32(rawValue) }
    }
}
