/// USERNAME (RFC 8489 §14.3): who a request claims to be, used with the short-term credential
/// mechanism. In ICE it is `RFRAG:LFRAG` (RFC 8445 §7.2.2): the receiver's ufrag, a colon, then
/// the sender's. The receiving side finds its own ufrag before the colon, which is what the
/// demultiplexer keys on.
public enum Username {
    /// RFC 8489 asks for fewer than 509 bytes, RFC 5389 allowed up to 513, and two maximal ICE
    /// ufrags (256 characters each, RFC 8839 §5.4) plus the colon make 513. Accept up to 513.
    public static let maximumLength = 513

    /// The ICE username a check sent to `receiverUfrag` by `senderUfrag` carries.
    public static func ice(receiverUfrag: String, senderUfrag: String) -> [UInt8] {
        Array(receiverUfrag.utf8) + [UInt8(ascii: ":")] + Array(senderUfrag.utf8)
    }
}

extension STUNMessage {
    /// The raw USERNAME value (a slice of the message, no copy); nil when absent.
    public var username: ArraySlice<UInt8>? {
        index.username.map { bytes[$0] }
    }

    /// USERNAME as text; invalid UTF-8 is replaced rather than refused.
    public var usernameString: String? {
        username.map { String(decoding: $0, as: UTF8.self) }
    }
}

extension STUNMessageBuilder {
    /// Appends USERNAME. The caller keeps it within `Username.maximumLength`.
    public mutating func appendUsername(_ username: some Collection<UInt8>) {
        appendAttribute(.username, value: username)
    }

    /// Appends USERNAME from text (its UTF-8 bytes).
    public mutating func appendUsername(_ username: String) {
        appendAttribute(.username, value: username.utf8)
    }
}
