import ChorusCore
import Foundation
import GRDB

/// An application: the tenant that owns rooms and users, identified by its key and
/// authenticated with its secret.
public struct ApplicationRecord: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "application"
    public var id: Int64?
    public var key: String
    /// Base64 of 16 random bytes. Kept in clear: both signature schemes need the secret itself.
    public var secret: String
    public var name: String
    /// Whether a join may create a room that does not exist yet.
    public var autoCreateRooms: Bool
    public var createdAt: Date

    public init(key: ApplicationKey, secret: String, name: String, createdAt: Date) {
        self.key = key.rawValue
        self.secret = secret
        self.name = name
        self.autoCreateRooms = true
        self.createdAt = createdAt
    }

    /// A stored row as it is, for stores that read rows themselves.
    public init(id: Int64?, key: String, secret: String, name: String, autoCreateRooms: Bool, createdAt: Date) {
        self.id = id
        self.key = key
        self.secret = secret
        self.name = name
        self.autoCreateRooms = autoCreateRooms
        self.createdAt = createdAt
    }

    public var applicationKey: ApplicationKey? { try? ApplicationKey(validating: key) }

    public mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }
}

extension SQLiteStore {
    /// Stores a new application.
    public func insertApplication(_ record: ApplicationRecord) async throws(StorageError) -> ApplicationRecord {
        try await insert(record)
    }

    public func application(key: String) async throws(StorageError) -> ApplicationRecord? {
        try await read { db in
            try ApplicationRecord.filter(Column("key") == key).fetchOne(db)
        }
    }

    public func application(id: Int64) async throws(StorageError) -> ApplicationRecord? {
        try await read { db in try ApplicationRecord.fetchOne(db, key: id) }
    }

    public func applications() async throws(StorageError) -> [ApplicationRecord] {
        try await read { db in try ApplicationRecord.order(Column("id")).fetchAll(db) }
    }

    public func applicationCount() async throws(StorageError) -> Int {
        try await read { db in try ApplicationRecord.fetchCount(db) }
    }

    /// The named server secret, created from `make()` on first use and stable afterwards
    /// (e.g. the access-token signing key, so tokens survive a restart).
    public func serverSecret(named name: String, make: @escaping @Sendable () -> [UInt8]) async throws(StorageError)
        -> [UInt8]
    {
        try await write { db in
            if let existing = try Data.fetchOne(db, sql: "SELECT value FROM serverSecret WHERE name = ?",
                                                arguments: [name]) {
                return Array(existing)
            }
            let value = make()
            try db.execute(sql: "INSERT INTO serverSecret(name, value) VALUES (?, ?)",
                           arguments: [name, Data(value)])
            return value
        }
    }
}
