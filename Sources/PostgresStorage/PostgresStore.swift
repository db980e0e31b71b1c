import ChorusCore
import Foundation
import Logging
import NIOSSL
import PostgresNIO
import Storage

/// The PostgreSQL implementation of `ChorusStore`, for nodes that share one database: a pool
/// of connections (postgres-nio's `PostgresClient`) to the database named by a `postgres://`
/// URL. Every statement runs in autocommit or in one explicit transaction, and a method returns
/// only after PostgreSQL acknowledged the COMMIT; the sessions ask for `synchronous_commit = on`
/// whatever the server's default, so that acknowledgement means the WAL record is flushed.
///
/// A database that is down or too slow never blocks a request for long: each operation gives
/// up after `operationTimeout` with `StorageError.unavailable` (the API's 503), and the pool
/// reconnects by itself when the server is back.
public final class PostgresStore: ChorusStore {
    public let location: String
    let client: PostgresClient
    let logger: Logger
    let operationTimeout: Duration
    /// Runs `client.run()`: the pool works only while this task runs; `close()` cancels it.
    private let runner: Task<Void, Never>

    /// Connects to `url`, brings the schema up to date (`Schema.migrations`, serialized between
    /// nodes by an advisory lock), and starts the pool. Throws `.unavailable` naming the
    /// problem (unreachable server, refused password, missing database…).
    public static func connect(
        _ url: PostgresURL, logger: Logger = Logger(label: "chorus.postgres"),
        operationTimeout: Duration = .seconds(5), maximumConnections: Int = 10
    ) async throws(StorageError) -> PostgresStore {
        let settings = ConnectionSettings(url: url)
        do {
            try await migrate(settings.connectionConfiguration(), logger: logger)
        } catch {
            throw .unavailable("cannot open the PostgreSQL database \(url.redacted): \(Self.describe(error))")
        }
        return PostgresStore(settings.clientConfiguration(maximumConnections: maximumConnections),
                             location: url.redacted, logger: logger, operationTimeout: operationTimeout)
    }

    private init(_ configuration: PostgresClient.Configuration, location: String, logger: Logger,
                 operationTimeout: Duration) {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.location = location
        self.logger = logger
        self.operationTimeout = operationTimeout
        runner = Task.detached { await client.run() }
    }

    deinit {
        runner.cancel()
    }

    /// Closes every connection; the store answers `.unavailable` afterwards.
    public func close() async {
        runner.cancel()
        await runner.value
    }

    /// Runs `body` with the pool, bounded by `operationTimeout`, mapping every failure to a
    /// `StorageError`.
    func run<T: Sendable>(_ body: @escaping @Sendable (PostgresClient) async throws -> T) async throws(StorageError)
        -> T
    {
        let client = self.client
        let timeout = operationTimeout
        do {
            guard let result = await boundedWait(timeout, { try await body(client) }) else {
                throw StorageError.unavailable("PostgreSQL did not answer within \(timeout)")
            }
            return try result.get()
        } catch {
            let mapped = Self.storageError(error)
            if case .unavailable(let reason) = mapped {
                logger.warning("PostgreSQL unavailable", metadata: ["reason": "\(reason)"])
            }
            throw mapped
        }
    }

    /// Runs `body` in one transaction (BEGIN … COMMIT, rolled back when it throws).
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T)
        async throws(StorageError) -> T
    {
        let logger = self.logger
        return try await run { client in
            try await client.withTransaction(logger: logger) { connection in try await body(connection) }
        }
    }
}

/// The first of an operation and its deadline.
extension PostgresStore {
    /// SQLSTATEs that mean the data itself refused the write.
    static func storageError(_ error: any Error) -> StorageError {
        if let storage = error as? StorageError { return storage }
        if let psql = error as? PSQLError, let state = psql.serverInfo?[.sqlState] {
            let message = psql.serverInfo?[.message] ?? state
            switch state {
            case "23505": return .conflict(message)  // unique_violation
            case "23503": return .notFound(message)  // foreign_key_violation
            default: return .unavailable("\(message) (SQLSTATE \(state))")
            }
        }
        return .unavailable(describe(error))
    }

    /// A readable reason, without the query's bound values (PSQLError's own description hides
    /// everything, its debug description shows too much).
    static func describe(_ error: any Error) -> String {
        guard let psql = error as? PSQLError else {
            if error is CancellationError { return "cancelled" }
            return "\(error)"
        }
        if let message = psql.serverInfo?[.message] {
            return "\(message) (SQLSTATE \(psql.serverInfo?[.sqlState] ?? "?"))"
        }
        if let underlying = psql.underlying { return "\(psql.code): \(underlying)" }
        return "\(psql.code)"
    }
}

/// How to reach the server of a `PostgresURL`, as postgres-nio's two configuration types.
struct ConnectionSettings {
    let url: PostgresURL
    /// Every session commits durably, whatever the server's default.
    static let startupParameters = [("synchronous_commit", "on"), ("application_name", "chorus")]

    /// libpq's `prefer` and `require` encrypt without verifying the certificate; so do these.
    static func tlsConfiguration() -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        return tls
    }

    func clientConfiguration(maximumConnections: Int) -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS = switch url.tls {
        case .disable: .disable
        case .prefer: .prefer(Self.tlsConfiguration())
        case .require: .require(Self.tlsConfiguration())
        }
        var configuration = PostgresClient.Configuration(
            host: url.host, port: url.port, username: url.user, password: url.password, database: url.database,
            tls: tls)
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.additionalStartupParameters = Self.startupParameters
        return configuration
    }

    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS = switch url.tls {
        case .disable: .disable
        case .prefer: .prefer(try NIOSSLContext(configuration: Self.tlsConfiguration()))
        case .require: .require(try NIOSSLContext(configuration: Self.tlsConfiguration()))
        }
        var configuration = PostgresConnection.Configuration(
            host: url.host, port: url.port, username: url.user, password: url.password, database: url.database,
            tls: tls)
        configuration.options.connectTimeout = .seconds(10)
        configuration.options.additionalStartupParameters = Self.startupParameters
        return configuration
    }
}
