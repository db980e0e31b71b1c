import ChorusCore

/// The RTP fixed header and the layout of one packet (RFC 3550 §5.1), parsed once at the edge:
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |V=2|P|X|  CC   |M|     PT      |       sequence number         |
/// |                           timestamp                           |
/// |           synchronization source (SSRC) identifier            |
/// |            contributing source (CSRC) identifiers  (0…15)     |
/// |   defined by profile (0xBEDE, 0x100X)  |       length         |  if X
/// |                 header extension (length × 4 bytes)           |
/// |                 payload ...  | padding ... | padding count     |  if P
/// ```
///
/// It holds the field values and the offsets of the CSRC list, the extension block and the
/// payload, relative to the first byte of the packet; it keeps no reference to the bytes, so the
/// owner can rewrite the buffer in place (see `RTPHeaderRewriter`) without a copy-on-write.
/// `RTPPacket` pairs it with the bytes for convenient reading. Parsing never allocates and never
/// traps: a malformed packet throws `RTPParseError`.
public struct RTPHeader: Sendable, Equatable {
    /// Length of the fixed part of the header, without CSRCs or extensions.
    public static let fixedLength = 12
    /// The only RTP version in use (RFC 3550).
    public static let version: UInt8 = 2

    public let marker: Bool
    public let payloadType: PayloadType
    public let sequenceNumber: UInt16
    public let timestamp: UInt32
    public let ssrc: SSRC
    /// Number of CSRC identifiers (the CC field, 0…15).
    public let csrcCount: Int
    /// The "defined by profile" field when the X bit is set: 0xBEDE for RFC 8285 one-byte
    /// elements, 0x100X for two-byte elements, anything else for a profile we do not decode.
    public let extensionProfile: UInt16?
    /// Offsets of the extension data (after its 4-byte header); empty when X is clear.
    public let extensionRange: Range<Int>
    /// Offsets of the payload, between the header and any padding.
    public let payloadRange: Range<Int>
    /// Number of padding bytes at the end, including the count byte itself; 0 when P is clear.
    public let paddingLength: Int

    /// Bytes before the payload: fixed header, CSRCs and the extension block.
    public var headerLength: Int { payloadRange.lowerBound }
    public var hasPadding: Bool { paddingLength > 0 }
    public var hasExtension: Bool { extensionProfile != nil }
    /// Offsets of the CSRC list.
    public var csrcRange: Range<Int> { Self.fixedLength..<(Self.fixedLength + 4 * csrcCount) }
    /// Length of the whole packet this header was parsed from.
    public var packetLength: Int { payloadRange.upperBound + paddingLength }

    /// Parses the packet in `bytes` (exactly one packet, as SRTP unprotect hands it over).
    public init(parsing bytes: ArraySlice<UInt8>) throws(RTPParseError) {
        guard bytes.count >= Self.fixedLength else { throw .truncated }
        let first = bytes.byte(at: 0)
        let version = first >> 6
        guard version == Self.version else { throw .unsupportedVersion(version) }
        let second = bytes.byte(at: 1)
        marker = second & 0x80 != 0
        payloadType = PayloadType(masking: second)
        sequenceNumber = bytes.uint16(at: 2)
        timestamp = bytes.uint32(at: 4)
        ssrc = SSRC(bytes.uint32(at: 8))
        csrcCount = Int(first & 0x0F)

        var offset = Self.fixedLength + 4 * csrcCount
        guard bytes.count >= offset else { throw .truncated }
        if first & 0x10 != 0 {
            let block = try Self.parseExtensionBlock(bytes, at: offset)
            extensionProfile = block.profile
            extensionRange = block.range
            offset = block.range.upperBound
        } else {
            extensionProfile = nil
            extensionRange = offset..<offset
        }

        paddingLength = try Self.paddingLength(bytes, hasPadding: first & 0x20 != 0, headerLength: offset)
        payloadRange = offset..<(bytes.count - paddingLength)
    }

    public init(parsing bytes: [UInt8]) throws(RTPParseError) {
        try self.init(parsing: bytes[...])
    }

    /// Reads the extension header at `offset` and checks that the block and, for RFC 8285
    /// profiles, every element in it fit in the packet.
    private static func parseExtensionBlock(_ bytes: ArraySlice<UInt8>, at offset: Int)
        throws(RTPParseError) -> (profile: UInt16, range: Range<Int>)
    {
        guard bytes.count >= offset + 4 else { throw .truncated }
        let profile = bytes.uint16(at: offset)
        let length = 4 * Int(bytes.uint16(at: offset + 2))
        let start = offset + 4
        guard bytes.count >= start + length else { throw .truncated }
        let data = bytes.bytes(at: start, count: length)
        if let form = RTPHeaderExtensionForm(profile: profile) {
            guard RTPHeaderExtensions.isWellFormed(data, form: form) else { throw .malformedHeaderExtension }
        }
        return (profile, start..<(start + length))
    }

    /// RFC 3550 §5.1: the last byte counts the padding, itself included, so it must be at least
    /// 1 and must not reach back into the header.
    private static func paddingLength(_ bytes: ArraySlice<UInt8>, hasPadding: Bool, headerLength: Int)
        throws(RTPParseError) -> Int
    {
        guard hasPadding else { return 0 }
        guard bytes.count > headerLength else { throw .invalidPadding }
        let count = Int(bytes.byte(at: bytes.count - 1))
        guard count >= 1, count <= bytes.count - headerLength else { throw .invalidPadding }
        return count
    }
}

/// One parsed RTP packet: its bytes and the `RTPHeader` that locates the parts inside them.
/// Reading through it costs no allocation (the slices share the packet's storage). Drop it before
/// rewriting the underlying array in place, or the array's copy-on-write will copy.
public struct RTPPacket: Sendable, Equatable {
    /// The whole packet; `header`'s offsets are relative to `bytes.startIndex`.
    public let bytes: ArraySlice<UInt8>
    public let header: RTPHeader

    public init(parsing bytes: ArraySlice<UInt8>) throws(RTPParseError) {
        header = try RTPHeader(parsing: bytes)
        self.bytes = bytes
    }

    public init(parsing bytes: [UInt8]) throws(RTPParseError) {
        try self.init(parsing: bytes[...])
    }

    public var payload: ArraySlice<UInt8> { slice(header.payloadRange) }

    /// The contributing sources, read from the packet without allocating.
    public var csrcs: CSRCList { CSRCList(bytes: slice(header.csrcRange)) }

    /// The RFC 8285 extension elements; empty when X is clear or the profile is not RFC 8285.
    public var headerExtensions: RTPHeaderExtensions {
        RTPHeaderExtensions(profile: header.extensionProfile, data: slice(header.extensionRange))
    }

    private func slice(_ range: Range<Int>) -> ArraySlice<UInt8> {
        bytes[(bytes.startIndex + range.lowerBound)..<(bytes.startIndex + range.upperBound)]
    }
}

/// The CSRC identifiers of one packet, decoded on access from the packet's bytes.
public struct CSRCList: RandomAccessCollection, Sendable, Equatable {
    let bytes: ArraySlice<UInt8>

    public var startIndex: Int { 0 }
    public var endIndex: Int { bytes.count / 4 }

    public subscript(position: Int) -> SSRC {
        SSRC(bytes.uint32(at: 4 * position))
    }
}
