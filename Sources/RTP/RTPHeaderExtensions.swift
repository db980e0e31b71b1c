/// The two RFC 8285 element layouts, named by the "defined by profile" field of the extension
/// header: one-byte (0xBEDE, §4.2) and two-byte (0x100 followed by 4 application bits, §4.3).
public enum RTPHeaderExtensionForm: Sendable, Equatable {
    /// `|ID(4)|L(4)|data (L+1 bytes)|`, IDs 1…14, 1…16 bytes of data.
    case oneByte
    /// `|ID(8)|length(8)|data (length bytes)|`, IDs 1…255, 0…255 bytes of data.
    case twoByte(appBits: UInt8)

    public static let oneByteProfile: UInt16 = 0xBEDE
    public static let twoByteProfileBase: UInt16 = 0x1000

    /// nil for a profile that RFC 8285 does not define.
    public init?(profile: UInt16) {
        if profile == Self.oneByteProfile {
            self = .oneByte
        } else if profile & 0xFFF0 == Self.twoByteProfileBase {
            self = .twoByte(appBits: UInt8(profile & 0x0F))
        } else {
            return nil
        }
    }

    public var profile: UInt16 {
        switch self {
        case .oneByte: return Self.oneByteProfile
        case .twoByte(let appBits): return Self.twoByteProfileBase | UInt16(appBits & 0x0F)
        }
    }
}

/// The RFC 8285 elements of one packet's header extension block, iterated in place: each element
/// is an ID and a slice of the packet's bytes, so walking the block allocates nothing.
///
/// `RTPHeader` has already checked that every element fits in the block, so iteration cannot
/// fail. Per RFC 8285 zero bytes between elements are padding and are skipped; in the one-byte
/// form ID 15 (reserved) or a non-zero byte with ID 0 ends processing, keeping the elements
/// before it. Use `first(id:)` or an `RTPHeaderExtensionMap` to reach the negotiated extensions.
public struct RTPHeaderExtensions: Sequence, Sendable, Equatable {
    /// One element: its local ID (negotiated with `a=extmap`) and its data.
    public struct Element: Sendable, Equatable {
        public let id: UInt8
        public let data: ArraySlice<UInt8>
    }

    /// The element layout, nil when there is no block or its profile is not RFC 8285.
    public let form: RTPHeaderExtensionForm?
    /// The extension data after the 4-byte extension header.
    public let data: ArraySlice<UInt8>

    public init(profile: UInt16?, data: ArraySlice<UInt8>) {
        form = profile.flatMap(RTPHeaderExtensionForm.init(profile:))
        self.data = data
    }

    /// The data of the first element with `id`, nil when absent.
    public func first(id: UInt8) -> ArraySlice<UInt8>? {
        for element in self where element.id == id {
            return element.data
        }
        return nil
    }

    public func makeIterator() -> Iterator {
        Iterator(data: data, form: form)
    }

    /// Walks the block element by element.
    public struct Iterator: IteratorProtocol {
        let data: ArraySlice<UInt8>
        let form: RTPHeaderExtensionForm?
        var offset = 0

        public mutating func next() -> Element? {
            guard let form else { return nil }
            while true {
                switch RTPHeaderExtensions.step(data, at: offset, form: form) {
                case .padding(let next):
                    offset = next
                case .element(let id, let range):
                    offset = range.upperBound
                    return Element(id: id, data: data.bytes(at: range.lowerBound, count: range.count))
                case .end, .malformed:
                    offset = data.count
                    return nil
                }
            }
        }
    }

    /// True when every element before the end of processing fits in `data`.
    static func isWellFormed(_ data: ArraySlice<UInt8>, form: RTPHeaderExtensionForm) -> Bool {
        var offset = 0
        while true {
            switch step(data, at: offset, form: form) {
            case .padding(let next): offset = next
            case .element(_, let range): offset = range.upperBound
            case .end: return true
            case .malformed: return false
            }
        }
    }

    enum Step {
        case padding(next: Int)
        /// `range` is the element's data, in offsets relative to the block.
        case element(id: UInt8, range: Range<Int>)
        case end
        case malformed
    }

    /// Decodes what starts at `offset`: the one rule shared by validation and iteration.
    static func step(_ data: ArraySlice<UInt8>, at offset: Int, form: RTPHeaderExtensionForm) -> Step {
        step(count: data.count, at: offset, form: form) { data.byte(at: $0) }
    }

    /// The same over any storage: `byte(i)` reads offset `i` (`0 ..< count`) of the block.
    @inline(__always)
    static func step(count: Int, at offset: Int, form: RTPHeaderExtensionForm, byte: (Int) -> UInt8) -> Step {
        guard offset < count else { return .end }
        let first = byte(offset)
        if first == 0 { return .padding(next: offset + 1) }
        switch form {
        case .oneByte:
            let id = first >> 4
            // ID 15 is reserved: "processing of the entire extension MUST terminate" (§4.2).
            // A non-zero byte with ID 0 is not padding either; stop there as libwebrtc does.
            guard id != 15, id != 0 else { return .end }
            let length = Int(first & 0x0F) + 1
            let start = offset + 1
            guard start + length <= count else { return .malformed }
            return .element(id: id, range: start..<(start + length))
        case .twoByte:
            guard offset + 2 <= count else { return .malformed }
            let length = Int(byte(offset + 1))
            let start = offset + 2
            guard start + length <= count else { return .malformed }
            return .element(id: first, range: start..<(start + length))
        }
    }
}
