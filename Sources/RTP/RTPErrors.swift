/// Why bytes from the network were refused as RTP, an RTP header extension or a payload
/// descriptor. Parsers throw it instead of trapping; the packet's owner drops the packet and
/// counts the case.
public enum RTPParseError: Error, Equatable, Sendable {
    /// Fewer bytes than the fixed header, the CSRC list or the extension length promise.
    case truncated
    /// The version field is not 2 (RFC 3550 §5.1).
    case unsupportedVersion(UInt8)
    /// The padding count is 0 or larger than what follows the header (RFC 3550 §5.1).
    case invalidPadding
    /// An RFC 8285 element runs past the end of the extension block.
    case malformedHeaderExtension
    /// A payload descriptor or payload header (e.g. VP8, RFC 7741) is cut short or inconsistent.
    case malformedPayloadDescriptor
    /// The payload is empty where the payload format needs data after its descriptor.
    case emptyPayload
}

/// Why a header could not be serialized: the caller asked for something the wire format cannot
/// carry. These are programming or configuration errors on our side, reported instead of trapping.
public enum RTPSerializationError: Error, Equatable, Sendable {
    /// More than 15 CSRCs (the CC field has 4 bits).
    case tooManyCSRCs(Int)
    /// The ID does not fit the chosen header extension form (1…14 one-byte, 1…255 two-byte).
    case invalidExtensionID(UInt8)
    /// The element's data does not fit its form (1…16 bytes one-byte, 0…255 two-byte).
    case extensionDataTooLong(id: UInt8, length: Int)
    /// The extension block exceeds 65535 32-bit words.
    case extensionBlockTooLong
    /// The caller-provided buffer is smaller than `needed` bytes.
    case bufferTooSmall(needed: Int)
}
