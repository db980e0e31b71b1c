import Foundation
import Logging
import PostgresNIO
import Storage

extension PostgresStore {
    /// Any constant shared by every Chorus node: the advisory lock that serializes migrations.
    static let migrationLock: Int64 = 0x4368_6F72_7573 // "Chorus"

    /// Applies the migrations of `Schema.migrations` that this database has not seen, on one
    /// dedicated connection, in one transaction. Nodes starting together take turns on an
    /// advisory lock; the second finds the work done.
    static func migrate(_ configuration: PostgresConnection.Configuration, logger: Logger) async throws {
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
        do {
            try await connection.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(migrationLock))", logger: logger)
                try await connection.query("""
                    CREATE TABLE IF NOT EXISTS "chorusMigration" (
                      "name" TEXT PRIMARY KEY, "appliedAt" TIMESTAMPTZ NOT NULL)
                    """, logger: logger)
                var applied = Set<String>()
                for try await name in try await connection.query(
                    #"SELECT "name" FROM "chorusMigration""#, logger: logger).decode(String.self) {
                    applied.insert(name)
                }
                for migration in Schema.migrations where !applied.contains(migration.name) {
                    for sql in migration.statements(in: .postgres) {
                        try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
                    }
                    try await connection.query(
                        #"INSERT INTO "chorusMigration"("name", "appliedAt") VALUES (\#(migration.name), \#(Date()))"#,
                        logger: logger)
                    logger.info("PostgreSQL schema migrated", metadata: ["migration": "\(migration.name)"])
                }
            }
        } catch {
            try? await connection.close()
            throw error
        }
        try? await connection.close()
    }
}

extension PostgresStore {
    /// The names of the applied migrations, in the order they ran.
    public func appliedMigrations() async throws(StorageError) -> [String] {
        var names: [String] = []
        for row in try await all(#"SELECT "name" FROM "chorusMigration" ORDER BY "appliedAt", "name""#) {
            names.append(try Rows.decode(row, "name", String.self) ?? "")
        }
        return names
    }

    /// A run-time setting as this store's sessions see it (e.g. `synchronous_commit`), nil when
    /// the server has no such setting.
    public func setting(_ name: String) async throws(StorageError) -> String? {
        let row = try await first("SELECT current_setting(\(name), true) AS \"value\"")
        return try Rows.decode(row, "value", String?.self) ?? nil
    }
}
