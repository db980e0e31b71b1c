import Foundation

/// A call's custom headers: what a caller attaches to its join, as the Sinch SDK lets a caller
/// attach headers to a call (a map of strings, at most 1,024 bytes in all). Stored with the call
/// as a JSON object, shown in the call record and told in `participant.joined`.
enum CallHeaders {
    /// The SDK's limit: the UTF-8 bytes of every key and value together.
    static let maxBytes = 1_024

    /// The headers of a join body; empty when none were given. Anything but a JSON object of
    /// strings, an empty key, or more than `maxBytes` in all is a 400 naming the problem.
    static func validated(_ value: JSONValue?) throws -> [String: String] {
        guard let value, value != .null else { return [:] }
        guard case .object(let object) = value else {
            throw APIError.badRequest("invalidHeaders", "headers must be a JSON object whose values are strings")
        }
        var headers: [String: String] = [:]
        var bytes = 0
        for (key, field) in object {
            guard case .string(let text) = field else {
                throw APIError.badRequest("invalidHeaders", "header \"\(key.prefix(64))\" must be a string")
            }
            guard !key.isEmpty else { throw APIError.badRequest("invalidHeaders", "a header name must not be empty") }
            bytes += key.utf8.count + text.utf8.count
            headers[key] = text
        }
        guard bytes <= maxBytes else {
            throw APIError.badRequest("headersTooLarge",
                                      "headers are \(bytes) bytes (names and values); at most \(maxBytes) are allowed")
        }
        return headers
    }

    /// The stored form: a JSON object with sorted keys; nil for no headers.
    static func stored(_ headers: [String: String]) -> String? {
        guard !headers.isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(headers)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The headers of a stored call; nil when it has none (or the stored text is not an object of strings).
    static func decoded(_ stored: String?) -> [String: String]? {
        stored.flatMap { try? JSONDecoder().decode([String: String].self, from: Data($0.utf8)) }
    }
}
