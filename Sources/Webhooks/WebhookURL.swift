import Foundation

/// A webhook endpoint's URL, checked when an application registers it and again before each
/// post: http or https, a host, no user information, at most 2,048 characters.
public struct WebhookURL: Sendable, Equatable {
    public static let maxLength = 2_048
    public let text: String
    public let secure: Bool
    /// The host as the HTTP client reads it from `text` (IPv6 without brackets): the name the
    /// address policy checks is the one the client's connection is pinned for.
    public let host: String
    public let port: Int

    public init?(_ text: String) {
        guard text.utf8.count <= Self.maxLength, let components = URLComponents(string: text),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host, !host.isEmpty, components.user == nil, components.password == nil,
              let clientHost = URL(string: text)?.host
        else { return nil }
        self.text = text
        secure = scheme == "https"
        self.host = Self.withoutBrackets(host)
        // The client (AsyncHTTPClient) parses the URL with `URL`: a host it would read
        // differently could escape the pinning, so such a URL is refused.
        guard Self.withoutBrackets(clientHost) == self.host else { return nil }
        port = components.port ?? (secure ? 443 : 80)
        guard (1...65_535).contains(port) else { return nil }
    }

    private static func withoutBrackets(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }
}
