import Foundation
import GRDB

/// The SQLite implementation of `ChorusStore` (the embedded default): one file opened once by
/// the composition root and shared by the control API; every method is `async` and runs on
/// GRDB's writer or reader queues, never on a room's queue.
///
/// Durability: a file database runs in WAL mode with `synchronous = FULL`, so a write that
/// returned (and so was acknowledged to a client) survives a crash or power loss. `:memory:`
/// is for tests and throwaway runs.
public final class SQLiteStore: ChorusStore {
    let writer: any DatabaseWriter
    /// Where the data lives: a file path, or ":memory:".
    public let location: String

    public init(path: String) throws(StorageError) {
        var config = Configuration()
        config.busyMode = .timeout(5)
        location = path
        do {
            if path == ":memory:" {
                writer = try DatabaseQueue(configuration: config)
            } else {
                writer = try DatabasePool(path: path, configuration: config)
            }
            // FULL makes each WAL commit durable before it returns; NORMAL (GRDB's choice for WAL,
            // applied after `prepareDatabase`) could lose the last acknowledged registration
            // sequence or statistics upload on power loss. The pool has one long-lived writer
            // connection, so setting it here covers every write.
            try writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            try Self.migrator.migrate(writer)
        } catch {
            throw StorageError.unavailable("cannot open database at \(path): \(error)")
        }
    }

    /// Nothing to do: GRDB closes the file when the store is released.
    public func close() async {}

    /// Runs SQLite's own consistency check; "ok" when the file is sound.
    public func integrityCheck() async throws(StorageError) -> String {
        try await read { db in
            try String.fetchOne(db, sql: "PRAGMA integrity_check") ?? "no result"
        }
    }

    /// Writes in one immediate transaction, mapping SQLite errors to `StorageError`.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(StorageError) -> T {
        do {
            return try await writer.write(body)
        } catch {
            throw StorageError(error)
        }
    }

    /// Inserts a record and returns it with its new row id.
    func insert<R: MutablePersistableRecord & Sendable>(_ record: R) async throws(StorageError) -> R {
        try await write { db in
            var record = record
            try record.insert(db)
            return record
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(StorageError) -> T {
        do {
            return try await writer.read(body)
        } catch {
            throw StorageError(error)
        }
    }
}

/// Storage failures, already sorted into what the API needs to tell apart.
public enum StorageError: Error, Equatable, Sendable {
    /// A uniqueness rule was hit (an existing room ID, an idempotency key).
    case conflict(String)
    /// A referenced row does not exist.
    case notFound(String)
    /// The database could not answer in time (busy, locked, I/O): the client may retry.
    case unavailable(String)
    /// A page token that this server did not issue.
    case invalidPageToken

    init(_ error: any Error) {
        if let storage = error as? StorageError {
            self = storage
            return
        }
        guard let db = error as? DatabaseError else {
            self = .unavailable("\(error)")
            return
        }
        switch db.extendedResultCode {
        case .SQLITE_CONSTRAINT_UNIQUE, .SQLITE_CONSTRAINT_PRIMARYKEY:
            self = .conflict(db.message ?? "constraint")
        case .SQLITE_CONSTRAINT_FOREIGNKEY:
            self = .notFound(db.message ?? "foreign key")
        default:
            self = .unavailable(db.message ?? "\(db.resultCode)")
        }
    }
}

extension SQLiteStore {
    /// The value of a read-only PRAGMA, as text (for operations and tests).
    public func pragma(_ name: String) async throws(StorageError) -> String? {
        guard name.allSatisfy({ $0.isLetter || $0 == "_" }) else { return nil }
        return try await write { db in try String.fetchOne(db, sql: "PRAGMA \(name)") }
    }
}
