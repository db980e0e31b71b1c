/// Why bytes were refused as a STUN message. The parser throws one of these for any input it
/// cannot accept; it never traps, whatever the bytes.
public enum STUNParseError: Error, Hashable, Sendable {
    /// Fewer than the 20 header bytes.
    case tooShort
    /// The top two bits are set or the magic cookie is wrong: some other protocol (RFC 7983).
    case notSTUN
    /// The length field is not a multiple of 4 or does not match the datagram's size.
    case lengthMismatch
    /// An attribute header or value runs past the end of the message.
    case truncatedAttribute
    /// A known attribute whose value has the wrong size or content.
    case invalidAttribute(STUNAttributeType)
    /// Something follows FINGERPRINT, which RFC 8489 §14.7 requires to be last.
    case attributeAfterFingerprint
}
