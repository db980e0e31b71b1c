/// A parsed STUN message (RFC 8489 §5–§6): the header and an index of the attributes Chorus
/// understands. Parsing never copies the datagram: the value keeps the caller's array (shared,
/// copy-on-write) and remembers where each attribute's value lies, so reading a Binding request
/// allocates nothing. Typed accessors (`username`, `priority`, `xorMappedAddress`, …) live next
/// to each attribute's codec.
///
/// Parsing checks structure and the sizes of known attributes; it does not check
/// MESSAGE-INTEGRITY or FINGERPRINT, which need a key or cost a CRC: call
/// `hasValidMessageIntegrity(key:)` and `fingerprintIsValid` for those.
///
/// Following RFC 8489 §14, only the first occurrence of an attribute counts, and attributes after
/// MESSAGE-INTEGRITY other than FINGERPRINT are ignored by the typed accessors (they are still
/// visible through `attributes`).
public struct STUNMessage: Sendable {
    /// RFC 8489 §6: the fixed value in bytes 4..<8 that tells STUN from other protocols.
    public static let magicCookie: UInt32 = 0x2112_A442
    public static let headerLength = 20

    /// The whole message exactly as received (header and attributes).
    public let bytes: [UInt8]
    public let type: STUNMessageType
    public let transactionID: TransactionID
    /// Comprehension-required attribute types (below 0x8000) that Chorus does not understand,
    /// in order of first appearance, without repeats, at most `maximumReportedUnknownAttributes`
    /// of them. A request carrying any is answered with 420 and an UNKNOWN-ATTRIBUTES list
    /// (RFC 8489 §6.3.1). Empty, and unallocated, in the normal case.
    public let unknownComprehensionRequiredAttributes: [STUNAttributeType]

    /// Bounds the unknown-type list, so that a datagram stuffed with thousands of distinct
    /// unknown types costs linear, not quadratic, time before it is authenticated.
    public static let maximumReportedUnknownAttributes = 16
    let index: AttributeIndex

    /// Parses one STUN message that must fill `bytes` exactly (a UDP datagram). Throws for any
    /// input that is not a well-formed message; never traps.
    public init(parsing bytes: [UInt8]) throws(STUNParseError) {
        let header = try Self.parseHeader(bytes)
        var index = AttributeIndex()
        var unknown: [STUNAttributeType] = []
        var offset = Self.headerLength
        while offset < bytes.count {
            guard let rawType = bytes.stunUInt16(at: offset), let length = bytes.stunUInt16(at: offset &+ 2) else {
                throw .truncatedAttribute
            }
            let valueStart = offset &+ 4
            let paddedEnd = valueStart &+ STUNAttribute.paddedLength(Int(length))
            guard paddedEnd <= bytes.count else { throw .truncatedAttribute }
            guard index.fingerprint == nil else { throw .attributeAfterFingerprint }
            let type = STUNAttributeType(rawValue: rawType)
            try index.record(type, at: offset, value: valueStart..<(valueStart &+ Int(length)), in: bytes)
            if index.isUnknown(type), unknown.count < Self.maximumReportedUnknownAttributes, !unknown.contains(type) {
                unknown.append(type)
            }
            offset = paddedEnd
        }
        self.bytes = bytes
        self.type = header.type
        self.transactionID = header.transactionID
        self.index = index
        self.unknownComprehensionRequiredAttributes = unknown
    }

    /// Parses from raw memory (for example a NIO buffer's readable bytes). Copies the bytes once.
    public init(parsing buffer: UnsafeRawBufferPointer) throws(STUNParseError) {
        try self.init(parsing: Array(buffer))
    }

    /// Every attribute in wire order, repeated ones and ignored ones included.
    public var attributes: STUNAttributes { STUNAttributes(bytes: bytes) }

    /// The value of the first attribute of `type`, wherever it is; nil when absent.
    public func firstAttribute(_ type: STUNAttributeType) -> ArraySlice<UInt8>? {
        attributes.first { $0.type == type }?.value
    }

    /// RFC 8489 §5–§6: zero top bits, the magic cookie, a length that is a multiple of 4 and
    /// that matches the bytes present.
    static func parseHeader(_ bytes: [UInt8]) throws(STUNParseError)
        -> (type: STUNMessageType, transactionID: TransactionID) {
        guard bytes.count >= headerLength,
              let rawType = bytes.stunUInt16(at: 0), let length = bytes.stunUInt16(at: 2),
              let cookie = bytes.stunUInt32(at: 4),
              let high = bytes.stunUInt32(at: 8), let low = bytes.stunUInt64(at: 12)
        else { throw .tooShort }
        guard let type = STUNMessageType(rawValue: rawType), cookie == magicCookie else { throw .notSTUN }
        guard length & 3 == 0, Int(length) == bytes.count &- headerLength else { throw .lengthMismatch }
        return (type, TransactionID(high: high, low: low))
    }
}

/// Where the understood attributes of a message lie, as offsets into its bytes. Filled in one
/// pass by the parser, which also checks each known attribute's size, so the typed accessors can
/// decode without failing.
struct AttributeIndex: Sendable, Equatable {
    var username: Range<Int>?
    /// Offset of the MESSAGE-INTEGRITY attribute's header (not its value).
    var messageIntegrity: Int?
    /// Offset of the FINGERPRINT attribute's header (not its value).
    var fingerprint: Int?
    var xorMappedAddress: Range<Int>?
    var errorCode: Range<Int>?
    var unknownAttributes: Range<Int>?
    var software: Range<Int>?
    var priority: Range<Int>?
    var useCandidate = false
    var iceControlling: Range<Int>?
    var iceControlled: Range<Int>?

    /// Types Chorus understands: anything else below 0x8000 makes the message unprocessable.
    static let understood: Set<STUNAttributeType> = [
        .username, .messageIntegrity, .errorCode, .unknownAttributes, .xorMappedAddress,
        .priority, .useCandidate, .fingerprint, .software, .iceControlled, .iceControlling,
    ]

    /// True for a comprehension-required type that Chorus does not understand and that counts
    /// (it is not after MESSAGE-INTEGRITY, where RFC 8489 §14 says to ignore attributes).
    func isUnknown(_ type: STUNAttributeType) -> Bool {
        type.isComprehensionRequired && messageIntegrity == nil && !Self.understood.contains(type)
    }

    /// Notes one attribute, validating the size of known ones. Only the first occurrence counts.
    mutating func record(_ type: STUNAttributeType, at offset: Int, value: Range<Int>,
                         in bytes: [UInt8]) throws(STUNParseError) {
        if type == .fingerprint {
            guard value.count == Fingerprint.valueLength else { throw .invalidAttribute(type) }
            fingerprint = offset
            return
        }
        // RFC 8489 §14: everything after MESSAGE-INTEGRITY except FINGERPRINT is ignored.
        guard messageIntegrity == nil else { return }
        let n = value.count
        switch type {
        case .messageIntegrity:
            guard n == MessageIntegrity.valueLength else { throw .invalidAttribute(type) }
            messageIntegrity = offset
        case .username: try Self.keep(&username, value, valid: n <= Username.maximumLength, type)
        case .xorMappedAddress:
            try Self.keep(&xorMappedAddress, value, valid: XORMappedAddress.isWellFormed(bytes, value), type)
        case .errorCode: try Self.keep(&errorCode, value, valid: ErrorCode.isWellFormed(bytes, value), type)
        case .unknownAttributes: try Self.keep(&unknownAttributes, value, valid: n & 1 == 0, type)
        case .software: try Self.keep(&software, value, valid: n <= Software.maximumLength, type)
        case .priority: try Self.keep(&priority, value, valid: n == 4, type)
        case .iceControlling: try Self.keep(&iceControlling, value, valid: n == 8, type)
        case .iceControlled: try Self.keep(&iceControlled, value, valid: n == 8, type)
        case .useCandidate:
            guard n == 0 else { throw .invalidAttribute(type) }
            useCandidate = true
        default: break
        }
    }

    private static func keep(_ slot: inout Range<Int>?, _ value: Range<Int>, valid: Bool,
                             _ type: STUNAttributeType) throws(STUNParseError) {
        guard slot == nil else { return }
        guard valid else { throw .invalidAttribute(type) }
        slot = value
    }
}
