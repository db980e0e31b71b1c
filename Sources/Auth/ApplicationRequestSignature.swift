import Foundation

/// The signed form of application authentication:
/// `Authorization: Application <key>:<Base64(HMAC-SHA256(Base64Decode(secret), stringToSign))>`
/// where stringToSign is `METHOD \n Content-MD5 \n Content-Type \n x-timestamp:<ts> \n path` and
/// Content-MD5 is `Base64(MD5(body))`, empty for an empty body. The `x-timestamp` header must be
/// within `allowedSkew` of the server clock so a captured request cannot be replayed later.
public struct ApplicationRequestSignature: Sendable {
    public var method: String
    public var contentMD5: String
    public var contentType: String
    public var timestamp: String
    public var path: String

    public static let allowedSkew: TimeInterval = 15 * 60

    public init(method: String, body: some Collection<UInt8>, contentType: String, timestamp: String,
                path: String) {
        self.method = method.uppercased()
        self.contentMD5 = body.isEmpty ? "" : Base64.encode(Digest.md5(body))
        self.contentType = contentType
        self.timestamp = timestamp
        self.path = path
    }

    public var stringToSign: String {
        [method, contentMD5, contentType, "x-timestamp:" + timestamp, path].joined(separator: "\n")
    }

    /// The Base64 signature for `secret` (itself Base64); nil when the secret is not Base64.
    public func signature(secret: String) -> String? {
        guard let key = Base64.decode(secret) else { return nil }
        return Base64.encode(Digest.hmacSHA256(key: key, data: Array(stringToSign.utf8)))
    }

    /// Checks the presented signature in constant time and the timestamp against `now`.
    public func verify(_ presented: String, secret: String, now: Date) -> Verdict {
        guard let date = Self.parseTimestamp(timestamp) else { return .badTimestamp }
        guard abs(date.timeIntervalSince(now)) <= Self.allowedSkew else { return .staleTimestamp }
        guard let expected = signature(secret: secret).flatMap(Base64.decode),
              let given = Base64.decode(presented),
              constantTimeEquals(given, expected)
        else { return .badSignature }
        return .valid
    }

    /// Outcome of `verify`, each case mapped to its own API error code.
    public enum Verdict: Equatable, Sendable {
        case valid, badSignature, badTimestamp, staleTimestamp
    }

    /// ISO 8601 with or without fractional seconds, with a zone designator.
    public static func parseTimestamp(_ text: String) -> Date? {
        guard text.utf8.count <= 64 else { return nil }
        let plain = ISO8601DateFormatter()
        plain.formatOptions = [.withInternetDateTime]
        if let date = plain.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text)
    }
}
