/// A STUN attribute type (RFC 8489 §14, registry §18.3). Types below 0x8000 are
/// comprehension-required: an agent that does not understand one must not process the message
/// (a request is answered with 420 Unknown Attribute). Types from 0x8000 are
/// comprehension-optional and are ignored when not understood.
public struct STUNAttributeType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16

    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// RFC 8489 §14: the range 0x0000–0x7FFF must be understood to process the message.
    public var isComprehensionRequired: Bool { rawValue < 0x8000 }

    // RFC 8489 §18.3.
    public static let mappedAddress = STUNAttributeType(rawValue: 0x0001)
    public static let username = STUNAttributeType(rawValue: 0x0006)
    public static let messageIntegrity = STUNAttributeType(rawValue: 0x0008)
    public static let errorCode = STUNAttributeType(rawValue: 0x0009)
    public static let unknownAttributes = STUNAttributeType(rawValue: 0x000A)
    public static let realm = STUNAttributeType(rawValue: 0x0014)
    public static let nonce = STUNAttributeType(rawValue: 0x0015)
    public static let messageIntegritySHA256 = STUNAttributeType(rawValue: 0x001C)
    public static let xorMappedAddress = STUNAttributeType(rawValue: 0x0020)
    public static let software = STUNAttributeType(rawValue: 0x8022)
    public static let alternateServer = STUNAttributeType(rawValue: 0x8023)
    public static let fingerprint = STUNAttributeType(rawValue: 0x8028)
    // RFC 8445 §16.1.
    public static let priority = STUNAttributeType(rawValue: 0x0024)
    public static let useCandidate = STUNAttributeType(rawValue: 0x0025)
    public static let iceControlled = STUNAttributeType(rawValue: 0x8029)
    public static let iceControlling = STUNAttributeType(rawValue: 0x802A)

    public var description: String { "0x" + String(rawValue, radix: 16) }
}

/// One attribute as it sits in a parsed message (RFC 8489 §14): its type and its value without
/// padding. The value is a slice of the message's own bytes, so walking attributes allocates
/// nothing.
public struct STUNAttribute: Sendable, Equatable {
    public let type: STUNAttributeType
    public let value: ArraySlice<UInt8>

    public init(type: STUNAttributeType, value: ArraySlice<UInt8>) {
        self.type = type
        self.value = value
    }
}

/// The attributes of a parsed message in wire order, including repeated ones and those after
/// MESSAGE-INTEGRITY that the typed accessors ignore. Iterating is safe because the parser has
/// already checked that every TLV lies inside the message.
public struct STUNAttributes: Sequence, Sendable {
    let bytes: [UInt8]

    /// Walks the TLVs from the end of the header; stops at the first one that would not fit.
    public struct Iterator: IteratorProtocol {
        let bytes: [UInt8]
        var offset = STUNMessage.headerLength

        public mutating func next() -> STUNAttribute? {
            guard let type = bytes.stunUInt16(at: offset), let length = bytes.stunUInt16(at: offset &+ 2) else {
                return nil
            }
            let start = offset &+ 4
            let end = start &+ Int(length)
            guard end <= bytes.count else { return nil }
            offset = start &+ STUNAttribute.paddedLength(Int(length))
            return STUNAttribute(type: STUNAttributeType(rawValue: type), value: bytes[start..<end])
        }
    }

    public func makeIterator() -> Iterator { Iterator(bytes: bytes) }
}

extension STUNAttribute {
    /// RFC 8489 §14: every value is padded to a multiple of 4 bytes.
    @inline(__always)
    static func paddedLength(_ length: Int) -> Int { (length &+ 3) & ~3 }
}
