import ChorusCore

/// Why bytes from the network were refused as RTCP (RFC 3550 §6, RFC 4585 §6, RFC 5104 §4).
/// Parsers throw it instead of trapping; the compound iterator turns a bad individual packet
/// into `RTCPPacket.malformed` so the other packets of the datagram are still handled.
public enum RTCPParseError: Error, Equatable, Sendable {
    /// Fewer bytes than a header or a length field promises.
    case truncated
    /// The version field is not 2.
    case unsupportedVersion(UInt8)
    /// The length field disagrees with the bytes: a single packet whose length is not exactly
    /// the slice given, or a compound whose packets do not add up to the datagram.
    case invalidLength
    /// The padding count is 0, or reaches back into the packet header (RFC 3550 §6.4.1).
    case invalidPadding
    /// RFC 3550 §A.2 validation: the first packet of a compound must be SR or RR (or, for
    /// reduced-size RTCP, RFC 5506, another defined RTCP type) and must not be padded.
    case invalidFirstPacket(RTCPPacketType)
    /// The packet is not of the type (and feedback format) the caller asked to parse.
    case unexpectedPacketType(RTCPPacketType, format: UInt8)
    /// The body is inconsistent with itself: a count field promising more items than bytes,
    /// an FCI of the wrong size, an unterminated SDES chunk, a bad status chunk.
    case malformedBody
}

/// Why a message could not be serialized: the values exceed what its wire format can carry.
public enum RTCPSerializationError: Error, Equatable, Sendable {
    /// More items than the 5-bit count (31) or another count field allows.
    case tooManyItems(count: Int, limit: Int)
    /// An SDES item or BYE reason longer than 255 bytes.
    case textTooLong(Int)
    /// The packet would exceed 65536 32-bit words.
    case packetTooLong
    /// The message needs at least one item (NACK, FIR).
    case empty
    /// Opaque data (a profile extension) is not a whole number of 32-bit words.
    case notWordAligned(Int)
}
