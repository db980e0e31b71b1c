import ChorusCore

/// Generates application credentials: the key is a lowercase GUID, the secret Base64 of
/// 16 random bytes (the Sinch formats).
public enum ApplicationCredentials {
    public static func newKey() -> ApplicationKey {
        ApplicationKey(randomBytes: SecureRandom.bytes(16))
    }

    public static func newSecret() -> String {
        Base64.encode(SecureRandom.bytes(16))
    }

    /// A server-generated call identifier (random lowercase GUID).
    public static func newCallID() -> CallID {
        CallID(guid: ApplicationKey(randomBytes: SecureRandom.bytes(16)).rawValue)
    }
}
