import Foundation
import NIOCore
import PostgresNIO
import Storage

extension PostgresStore {
    public func insertApplication(_ record: ApplicationRecord) async throws(StorageError) -> ApplicationRecord {
        let row = try await first("""
            INSERT INTO "application"("key", "secret", "name", "autoCreateRooms", "createdAt")
            VALUES (\(record.key), \(record.secret), \(record.name), \(record.autoCreateRooms), \(record.createdAt))
            RETURNING *
            """)
        guard let row else { throw .unavailable("the insert returned no row") }
        return try Rows.application(row)
    }

    public func application(key: String) async throws(StorageError) -> ApplicationRecord? {
        try await first(#"SELECT * FROM "application" WHERE "key" = \#(key)"#).map(Rows.application)
    }

    public func application(id: Int64) async throws(StorageError) -> ApplicationRecord? {
        try await first(#"SELECT * FROM "application" WHERE "id" = \#(id)"#).map(Rows.application)
    }

    public func applications() async throws(StorageError) -> [ApplicationRecord] {
        try await all(#"SELECT * FROM "application" ORDER BY "id""#).map(Rows.application)
    }

    public func applicationCount() async throws(StorageError) -> Int {
        let row = try await first(#"SELECT count(*) AS "n" FROM "application""#)
        return try Rows.decode(row, "n", Int.self) ?? 0
    }

    /// Insert-if-absent, then read: concurrent first uses (even on several nodes) agree on the
    /// value that was committed first.
    public func serverSecret(named name: String, make: @escaping @Sendable () -> [UInt8]) async throws(StorageError)
        -> [UInt8]
    {
        let candidate = ByteBuffer(bytes: make())
        let row = try await first("""
            WITH inserted AS (
              INSERT INTO "serverSecret"("name", "value") VALUES (\(name), \(candidate))
              ON CONFLICT ("name") DO NOTHING RETURNING "value")
            SELECT "value" FROM inserted
            UNION ALL SELECT "value" FROM "serverSecret" WHERE "name" = \(name)
            LIMIT 1
            """)
        // A concurrent first use that committed while this statement waited on its row is not
        // in this statement's snapshot: read it in a fresh one.
        var stored = row
        if stored == nil {
            stored = try await first(#"SELECT "value" FROM "serverSecret" WHERE "name" = \#(name)"#)
        }
        guard let buffer = try Rows.decode(stored, "value", ByteBuffer.self) else {
            throw .unavailable("the server secret \(name) could not be read back")
        }
        return Array(buffer.readableBytesView)
    }

    /// One statement does the check and the write: the upsert's WHERE compares the stored mark
    /// numerically under the row lock, so of concurrent requests with the same sequence (on
    /// any connection of any node) exactly one returns a row.
    public func acceptRegistrationSequence(applicationId: Int64, userId: String, sequence: String, at now: Date)
        async throws(StorageError) -> SequenceOutcome
    {
        guard CanonicalDecimal.isValid(sequence) else {
            throw .conflict("sequence \(sequence.prefix(48)) is not a canonical decimal")
        }
        let accepted = try await first("""
            INSERT INTO "userRegistration"("applicationId", "userId", "lastSequence", "registeredAt")
            VALUES (\(applicationId), \(userId), \(sequence), \(now))
            ON CONFLICT ("applicationId", "userId") DO UPDATE
              SET "lastSequence" = EXCLUDED."lastSequence", "registeredAt" = EXCLUDED."registeredAt"
              WHERE "userRegistration"."lastSequence"::numeric < EXCLUDED."lastSequence"::numeric
            RETURNING 1 AS "accepted"
            """)
        if accepted != nil { return .accepted }
        let stored = try await first("""
            SELECT "lastSequence" FROM "userRegistration"
            WHERE "applicationId" = \(applicationId) AND "userId" = \(userId)
            """)
        return .replayed(lastAccepted: try Rows.decode(stored, "lastSequence", String.self) ?? "")
    }
}

extension PostgresStore {
    /// The first row of `query`'s answer (the rest is drained), nil when there is none.
    func first(_ query: PostgresQuery) async throws(StorageError) -> PostgresRow? {
        try await run { client in
            var found: PostgresRow?
            for try await row in try await client.query(query) where found == nil {
                found = row
            }
            return found
        }
    }

    /// Every row of `query`'s answer.
    func all(_ query: PostgresQuery) async throws(StorageError) -> [PostgresRow] {
        try await run { client in try await client.query(query).collect() }
    }

    /// How many rows `query` changed (UPDATE/DELETE … without RETURNING is written with
    /// RETURNING 1 and counted instead).
    func count(_ query: PostgresQuery) async throws(StorageError) -> Int {
        try await all(query).count
    }
}
