import ChorusCore

/// The Sinch SDK's user-registration credential: an application backend signs
/// `Base64(SHA1(userId + applicationKey + sequence + applicationSecret))` and the client presents
/// it with the sequence. The server recomputes it from the stored secret and compares in
/// constant time. Pure: no storage, no clock.
public enum RegistrationSignature {
    /// The signature the application backend is expected to send, as raw SHA-1 bytes.
    public static func expected(
        userId: UserID, applicationKey: ApplicationKey, sequence: RegistrationSequence,
        applicationSecret: String
    ) -> [UInt8] {
        let message = userId.rawValue + applicationKey.rawValue + sequence.decimal + applicationSecret
        return Digest.sha1(Array(message.utf8))
    }

    /// The same signature in its transmitted Base64 form.
    public static func sign(
        userId: UserID, applicationKey: ApplicationKey, sequence: RegistrationSequence,
        applicationSecret: String
    ) -> String {
        Base64.encode(expected(userId: userId, applicationKey: applicationKey, sequence: sequence,
                               applicationSecret: applicationSecret))
    }

    /// True when `presented` (Base64) is the right signature; any malformed input is simply false.
    public static func verify(
        _ presented: String, userId: UserID, applicationKey: ApplicationKey,
        sequence: RegistrationSequence, applicationSecret: String
    ) -> Bool {
        guard let bytes = Base64.decode(presented) else { return false }
        let want = expected(userId: userId, applicationKey: applicationKey, sequence: sequence,
                            applicationSecret: applicationSecret)
        return constantTimeEquals(bytes, want)
    }
}

/// A registration sequence: a non-negative integer in canonical decimal (no sign, no leading
/// zeros), of any size up to 40 digits so that 128-bit nonces fit. Ordered numerically; the
/// server accepts a registration only when its sequence is strictly greater than the last one.
public struct RegistrationSequence: Comparable, Hashable, Sendable, CustomStringConvertible {
    public static let maxDigits = 40
    /// The canonical decimal text, exactly as it enters the signature.
    public let decimal: String

    public init(validating text: String) throws(IdentifierError) {
        let bytes = Array(text.utf8)
        let allDigits = bytes.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        guard !bytes.isEmpty, bytes.count <= Self.maxDigits, allDigits else {
            throw IdentifierError(
                code: "invalidSequence",
                description: "sequence must be a non-negative integer of 1 to \(Self.maxDigits) digits")
        }
        guard bytes.count == 1 || bytes[0] != UInt8(ascii: "0") else {
            throw IdentifierError(code: "invalidSequence",
                                  description: "sequence must be written without leading zeros")
        }
        decimal = text
    }

    public init(_ value: UInt64) {
        decimal = String(value)
    }

    /// Numeric order on canonical decimals: the longer one is larger, else compare digit by digit.
    public static func < (lhs: Self, rhs: Self) -> Bool {
        let l = lhs.decimal.utf8.count, r = rhs.decimal.utf8.count
        if l != r { return l < r }
        return lhs.decimal.utf8.lexicographicallyPrecedes(rhs.decimal.utf8)
    }

    public var description: String { decimal }
}
