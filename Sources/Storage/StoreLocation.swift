import Foundation

/// Where `--db` (or `CHORUS_DB`) points: an SQLite file (or `:memory:`), or a PostgreSQL
/// database given as `postgres://user:password@host:port/dbname[?sslmode=disable|prefer|require]`.
/// Parsing never opens anything; a malformed URL is an error that names what is wrong.
public enum StoreLocation: Equatable, Sendable {
    case sqlite(path: String)
    case postgres(PostgresURL)

    public init(parsing text: String) throws(StoreLocationError) {
        let lower = text.lowercased()
        if lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://") {
            self = .postgres(try PostgresURL(parsing: text))
        } else if lower.contains("://") {
            throw StoreLocationError("unsupported database URL scheme in \(Self.redacted(text)): use postgres:// or an SQLite file path")
        } else if text.isEmpty {
            throw StoreLocationError("the database location is empty")
        } else {
            self = .sqlite(path: text)
        }
    }

    /// `text` with anything between "//" and "@" replaced, for error messages.
    static func redacted(_ text: String) -> String {
        guard let start = text.range(of: "://"), let at = text.range(of: "@", range: start.upperBound..<text.endIndex)
        else { return text }
        return String(text[..<start.upperBound]) + "***" + String(text[at.lowerBound...])
    }
}

/// A `--db` value that cannot be used, with the reason (never the password).
public struct StoreLocationError: Error, Equatable, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The parts of a `postgres://` URL that `PostgresStore` connects with.
public struct PostgresURL: Equatable, Sendable {
    /// libpq's sslmode values this server understands.
    public enum TLSMode: String, Sendable { case disable, prefer, require }

    public var host: String
    public var port: Int
    public var user: String
    public var password: String?
    public var database: String
    public var tls: TLSMode

    public init(parsing text: String) throws(StoreLocationError) {
        let shown = StoreLocation.redacted(text)
        guard let components = URLComponents(string: text) else {
            throw StoreLocationError("not a valid URL: \(shown)")
        }
        guard let host = components.host, !host.isEmpty else {
            throw StoreLocationError("the PostgreSQL URL \(shown) has no host")
        }
        guard let user = components.user.flatMap({ $0.removingPercentEncoding }), !user.isEmpty else {
            throw StoreLocationError("the PostgreSQL URL \(shown) has no user name (postgres://user:password@host/db)")
        }
        let port = components.port ?? 5432
        guard (1...65535).contains(port) else {
            throw StoreLocationError("the PostgreSQL URL \(shown) has port \(port), outside 1-65535")
        }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        guard let database = path.removingPercentEncoding, !database.isEmpty, !database.contains("/") else {
            throw StoreLocationError("the PostgreSQL URL \(shown) must name one database: postgres://user:password@host:port/dbname")
        }
        var tls = TLSMode.prefer
        for item in components.queryItems ?? [] {
            guard item.name == "sslmode" else {
                throw StoreLocationError("unknown parameter \(item.name) in the PostgreSQL URL (only sslmode is understood)")
            }
            guard let mode = item.value.flatMap(TLSMode.init(rawValue:)) else {
                throw StoreLocationError("sslmode must be disable, prefer or require, not \(item.value ?? "nothing")")
            }
            tls = mode
        }
        // IPv6 literals arrive bracketed from URLComponents on some platforms.
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.port = port
        self.user = user
        self.password = components.password.flatMap { $0.removingPercentEncoding }
        self.database = database
        self.tls = tls
    }

    /// The URL without its password, for logs.
    public var redacted: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "postgres://\(user)@\(shownHost):\(port)/\(database)"
    }
}
