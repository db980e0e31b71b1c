import ChorusCore

/// The DTLS record layer as it arrives (RFC 6347 §4.1, the DTLSPlaintext/DTLSCiphertext header
/// DTLS 1.2 uses), parsed before OpenSSL sees a datagram:
///
/// ```
/// | type (1) | version (2) | epoch (2) | sequence_number (6) | length (2) | fragment (length) |
/// ```
///
/// Several records may share one datagram (§4.1.1), and they must fill it exactly. A datagram
/// that does not frame is dropped here, where the fuzzer can see the checks, instead of deep in
/// OpenSSL, which is not instrumented. Records with RFC 9147's unified header (first byte
/// `001xxxxx`, DTLS 1.3 ciphertext) are passed through unparsed: OpenSSL 3.0 does not speak
/// DTLS 1.3, but a peer's stray record must not be mistaken for garbage by this layer.
public struct DTLSRecordHeader: Sendable, Equatable {
    public static let length = 13
    /// RFC 6347 §4.1 with RFC 6066: the largest fragment a record may carry (2^14 + 2048).
    public static let maximumFragment = 16_384 + 2_048

    public enum ContentType: UInt8, Sendable {
        case changeCipherSpec = 20, alert = 21, handshake = 22, applicationData = 23
    }

    public let contentType: ContentType
    /// 0xFEFF (DTLS 1.0, also a 1.2 ClientHello's record version) or 0xFEFD (DTLS 1.2).
    public let version: UInt16
    public let epoch: UInt16
    /// 48 bits.
    public let sequenceNumber: UInt64
    public let fragmentLength: Int

    public init(parsing bytes: ArraySlice<UInt8>) throws(DTLSRecordError) {
        guard bytes.count >= Self.length else { throw .truncated }
        guard let type = ContentType(rawValue: bytes.byte(at: 0)) else { throw .unknownContentType(bytes.byte(at: 0)) }
        let version = bytes.uint16(at: 1)
        guard version == 0xFEFF || version == 0xFEFD else { throw .unsupportedVersion(version) }
        let length = Int(bytes.uint16(at: 11))
        guard length <= Self.maximumFragment else { throw .fragmentTooLong(length) }
        guard bytes.count >= Self.length + length else { throw .truncated }
        contentType = type
        self.version = version
        epoch = bytes.uint16(at: 3)
        sequenceNumber = UInt64(bytes.uint16(at: 5)) << 32 | UInt64(bytes.uint32(at: 7))
        fragmentLength = length
    }
}

/// The header of a handshake message fragment (RFC 6347 §4.2.2), readable in epoch 0, where
/// handshake records are not encrypted:
///
/// ```
/// | msg_type (1) | length (3) | message_seq (2) | fragment_offset (3) | fragment_length (3) |
/// ```
public struct DTLSHandshakeHeader: Sendable, Equatable {
    public static let length = 12

    public let messageType: UInt8
    /// The whole message's body length; this fragment covers `fragmentOffset ..< + fragmentLength`.
    public let messageLength: Int
    public let messageSequence: UInt16
    public let fragmentOffset: Int
    public let fragmentLength: Int

    /// `bytes` is one handshake record's fragment; it may hold several handshake fragments, of
    /// which this reads the first.
    public init(parsing bytes: ArraySlice<UInt8>) throws(DTLSRecordError) {
        guard bytes.count >= Self.length else { throw .truncated }
        messageType = bytes.byte(at: 0)
        messageLength = Int(bytes.uint24(at: 1))
        messageSequence = bytes.uint16(at: 4)
        fragmentOffset = Int(bytes.uint24(at: 6))
        fragmentLength = Int(bytes.uint24(at: 9))
        guard fragmentOffset + fragmentLength <= messageLength else { throw .fragmentOutOfRange }
        guard bytes.count >= Self.length + fragmentLength else { throw .truncated }
    }
}

/// Why a datagram's records do not frame.
public enum DTLSRecordError: Error, Equatable, Sendable {
    case empty
    case truncated
    case unknownContentType(UInt8)
    case unsupportedVersion(UInt16)
    case fragmentTooLong(Int)
    /// A handshake fragment reaching past its message's length.
    case fragmentOutOfRange
}

/// The records of one datagram, checked to fill it exactly; epoch-0 handshake records also have
/// every handshake fragment header checked.
public struct DTLSRecordLayer: Sendable, Equatable {
    /// Each record's header and where its fragment lies in the datagram.
    public let records: [(header: DTLSRecordHeader, fragment: Range<Int>)]
    /// Records with a DTLS 1.3 unified header, passed through unparsed (0 or 1: such a record
    /// may run to the datagram's end).
    public let unifiedRecords: Int

    public init(parsing datagram: [UInt8]) throws(DTLSRecordError) {
        guard !datagram.isEmpty else { throw .empty }
        var records: [(header: DTLSRecordHeader, fragment: Range<Int>)] = []
        var offset = 0
        var unified = 0
        while offset < datagram.count {
            if datagram[offset] & 0xE0 == 0x20 {
                unified = 1
                break
            }
            let header = try DTLSRecordHeader(parsing: datagram[offset...])
            let fragment = (offset + DTLSRecordHeader.length)..<(offset + DTLSRecordHeader.length + header.fragmentLength)
            if header.contentType == .handshake, header.epoch == 0 {
                try Self.checkHandshakeFragments(datagram[fragment])
            }
            records.append((header, fragment))
            offset = fragment.upperBound
        }
        self.records = records
        unifiedRecords = unified
    }

    /// Every handshake fragment in an epoch-0 handshake record frames.
    static func checkHandshakeFragments(_ fragment: ArraySlice<UInt8>) throws(DTLSRecordError) {
        var rest = fragment
        guard !rest.isEmpty else { throw .truncated }
        while !rest.isEmpty {
            let header = try DTLSHandshakeHeader(parsing: rest)
            rest = rest.dropFirst(DTLSHandshakeHeader.length + header.fragmentLength)
        }
    }

    public static func == (lhs: DTLSRecordLayer, rhs: DTLSRecordLayer) -> Bool {
        lhs.unifiedRecords == rhs.unifiedRecords && lhs.records.map(\.header) == rhs.records.map(\.header)
            && lhs.records.map(\.fragment) == rhs.records.map(\.fragment)
    }
}
