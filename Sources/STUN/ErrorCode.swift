/// ERROR-CODE (RFC 8489 §14.8): the numeric code (300–699) and reason phrase of an error
/// response. On the wire: 21 reserved zero bits, the hundreds digit in 3 bits (Class, 3–6), the
/// rest in 8 bits (Number, 0–99), then a UTF-8 reason phrase of at most 763 bytes.
public struct ErrorCode: Hashable, Sendable, CustomStringConvertible {
    public let code: Int
    public let reasonPhrase: String

    static let maximumReasonLength = 763

    /// nil unless `code` is in 300...699 and the reason fits in 763 bytes of UTF-8.
    public init?(code: Int, reasonPhrase: String) {
        guard (300...699).contains(code), reasonPhrase.utf8.count <= Self.maximumReasonLength else { return nil }
        self.code = code
        self.reasonPhrase = reasonPhrase
    }

    private init(known code: Int, _ reasonPhrase: String) {
        self.code = code
        self.reasonPhrase = reasonPhrase
    }

    // RFC 8489 §14.8 and RFC 8445 §16.1.
    public static let tryAlternate = ErrorCode(known: 300, "Try Alternate")
    public static let badRequest = ErrorCode(known: 400, "Bad Request")
    public static let unauthenticated = ErrorCode(known: 401, "Unauthenticated")
    public static let unknownAttribute = ErrorCode(known: 420, "Unknown Attribute")
    public static let staleNonce = ErrorCode(known: 438, "Stale Nonce")
    public static let roleConflict = ErrorCode(known: 487, "Role Conflict")
    public static let serverError = ErrorCode(known: 500, "Server Error")

    public var description: String { "\(code) \(reasonPhrase)" }

    /// Parser check: reserved bytes, a class of 3–6, a number below 100, a bounded reason.
    static func isWellFormed(_ bytes: [UInt8], _ value: Range<Int>) -> Bool {
        guard value.count >= 4, value.count <= 4 &+ maximumReasonLength,
              value.lowerBound >= 0, value.upperBound <= bytes.count else { return false }
        let start = value.lowerBound
        let errorClass = bytes[start &+ 2] & 0x07
        return (3...6).contains(errorClass) && bytes[start &+ 3] < 100
    }
}

extension STUNMessage {
    /// The decoded ERROR-CODE; nil when absent.
    public var errorCode: ErrorCode? {
        guard let value = index.errorCode, value.count >= 4 else { return nil }
        let start = value.lowerBound
        let code = Int(bytes[start &+ 2] & 0x07) &* 100 &+ Int(bytes[start &+ 3])
        let reason = String(decoding: bytes[(start &+ 4)..<value.upperBound], as: UTF8.self)
        return ErrorCode(code: code, reasonPhrase: reason)
    }
}

extension STUNMessageBuilder {
    /// Appends ERROR-CODE.
    public mutating func appendErrorCode(_ error: ErrorCode) {
        let reason = error.reasonPhrase.utf8
        appendAttributeHeader(.errorCode, length: 4 &+ reason.count)
        bytes.append(0)
        bytes.append(0)
        bytes.append(UInt8(truncatingIfNeeded: error.code / 100))
        bytes.append(UInt8(truncatingIfNeeded: error.code % 100))
        bytes.append(contentsOf: reason)
        appendPadding(valueLength: 4 &+ reason.count)
    }
}
