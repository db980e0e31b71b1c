/// Identifiers shared by every layer, validated once at the edge (the REST API) so that the rest
/// of the server never sees a malformed one. The rules are the Sinch SDK's: room IDs of at most
/// 64 characters and user IDs of at most 255 bytes, both from the URL-safe set `A–Z a–z 0–9 - _ =`.
public enum IdentifierRule {
    /// True when every byte is in the URL-safe identifier alphabet `A–Z a–z 0–9 - _ =`.
    @inlinable
    public static func isURLSafe(_ value: String) -> Bool {
        value.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"),
                UInt8(ascii: "="):
                return true
            default:
                return false
            }
        }
    }
}

/// Why an identifier was refused; `code` is the stable machine-readable name the API returns.
public struct IdentifierError: Error, Equatable, Sendable, CustomStringConvertible {
    public let code: String
    public let description: String

    public init(code: String, description: String) {
        self.code = code
        self.description = description
    }
}

/// An identifier that is validated on construction and travels as a JSON string.
public protocol ValidatedIdentifier: Hashable, Sendable, Codable, CustomStringConvertible {
    var rawValue: String { get }
    init(validating rawValue: String) throws(IdentifierError)
}

extension ValidatedIdentifier {
    public init(from decoder: any Decoder) throws {
        try self.init(validating: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}

extension IdentifierRule {
    /// Checks 1…`maxBytes` bytes from the URL-safe set; the error names `field` and its rule.
    static func checkURLSafe(_ value: String, maxBytes: Int, field: String, code: String, unit: String)
        throws(IdentifierError)
    {
        guard !value.isEmpty, value.utf8.count <= maxBytes else {
            throw IdentifierError(code: code, description: "\(field) must be 1 to \(maxBytes) \(unit) long")
        }
        guard isURLSafe(value) else {
            throw IdentifierError(code: code, description: "\(field) may contain only A-Z a-z 0-9 - _ =")
        }
    }
}

/// A room's identifier within one application: 1–64 characters from `A–Z a–z 0–9 - _ =`.
public struct RoomID: ValidatedIdentifier {
    public static let maxLength = 64
    public let rawValue: String

    /// Validates `rawValue`; throws an `IdentifierError` with code `invalidRoomId` naming the rule.
    public init(validating rawValue: String) throws(IdentifierError) {
        // The alphabet is ASCII, so bytes and characters agree on every valid ID.
        try IdentifierRule.checkURLSafe(rawValue, maxBytes: Self.maxLength, field: "roomId", code: "invalidRoomId",
                                        unit: "characters")
        self.rawValue = rawValue
    }
}

/// A user's identifier within one application: 1–255 bytes from `A–Z a–z 0–9 - _ =`.
public struct UserID: ValidatedIdentifier {
    public static let maxBytes = 255
    public let rawValue: String

    /// Validates `rawValue`; throws an `IdentifierError` with code `invalidUserId` naming the rule.
    public init(validating rawValue: String) throws(IdentifierError) {
        try IdentifierRule.checkURLSafe(rawValue, maxBytes: Self.maxBytes, field: "userId", code: "invalidUserId",
                                        unit: "bytes")
        self.rawValue = rawValue
    }
}
