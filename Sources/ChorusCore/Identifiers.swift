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

/// A room's identifier within one application: 1–64 characters from `A–Z a–z 0–9 - _ =`.
public struct RoomID: Hashable, Sendable, Codable, CustomStringConvertible {
    public static let maxLength = 64
    public let rawValue: String

    /// Validates `rawValue`; throws an `IdentifierError` with code `invalidRoomId` naming the rule.
    public init(validating rawValue: String) throws(IdentifierError) {
        guard !rawValue.isEmpty, rawValue.utf8.count <= Self.maxLength else {
            throw IdentifierError(
                code: "invalidRoomId",
                description: "roomId must be 1 to \(Self.maxLength) characters long")
        }
        guard IdentifierRule.isURLSafe(rawValue) else {
            throw IdentifierError(
                code: "invalidRoomId",
                description: "roomId may contain only A-Z a-z 0-9 - _ =")
        }
        self.rawValue = rawValue
    }

    public init(from decoder: any Decoder) throws {
        let value = try decoder.singleValueContainer().decode(String.self)
        try self.init(validating: value)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}

/// A user's identifier within one application: 1–255 bytes from `A–Z a–z 0–9 - _ =`.
public struct UserID: Hashable, Sendable, Codable, CustomStringConvertible {
    public static let maxBytes = 255
    public let rawValue: String

    /// Validates `rawValue`; throws an `IdentifierError` with code `invalidUserId` naming the rule.
    public init(validating rawValue: String) throws(IdentifierError) {
        guard !rawValue.isEmpty, rawValue.utf8.count <= Self.maxBytes else {
            throw IdentifierError(
                code: "invalidUserId",
                description: "userId must be 1 to \(Self.maxBytes) bytes long")
        }
        guard IdentifierRule.isURLSafe(rawValue) else {
            throw IdentifierError(
                code: "invalidUserId",
                description: "userId may contain only A-Z a-z 0-9 - _ =")
        }
        self.rawValue = rawValue
    }

    public init(from decoder: any Decoder) throws {
        let value = try decoder.singleValueContainer().decode(String.self)
        try self.init(validating: value)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}
