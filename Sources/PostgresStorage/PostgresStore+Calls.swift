import Foundation
import PostgresNIO
import Storage

extension PostgresStore {
    public func insertCall(_ record: CallRecord) async throws(StorageError) -> CallRecord {
        let row = try await first("""
            INSERT INTO "call"("callId", "applicationId", "roomId", "userId", "displayName", "state", "joinedAt",
                               "establishedAt", "endedAt", "endCause", "serverStats", "nodeId", "headers")
            VALUES (\(record.callId), \(record.applicationId), \(record.roomId), \(record.userId),
                    \(record.displayName), \(record.state), \(record.joinedAt), \(record.establishedAt),
                    \(record.endedAt), \(record.endCause), \(record.serverStats), \(record.nodeId), \(record.headers))
            RETURNING *
            """)
        guard let row else { throw .unavailable("the insert returned no row") }
        return try Rows.call(row)
    }

    public func updateCall(_ record: CallRecord) async throws(StorageError) {
        _ = try await run { client in try await client.query(Self.updateQuery(record)).collect().count }
    }

    public func call(callId: String) async throws(StorageError) -> CallRecord? {
        try await first(#"SELECT * FROM "call" WHERE "callId" = \#(callId)"#).map(Rows.call)
    }

    public func calls(_ filter: CallFilter, after token: PageToken?, limit: Int) async throws(StorageError)
        -> Page<CallRecord>
    {
        // NULL filters match everything; the casts give PostgreSQL each parameter's type.
        let rows = try await all("""
            SELECT * FROM "call"
            WHERE "applicationId" = \(filter.applicationId) AND "id" > \(token?.afterRowID ?? 0)
              AND (\(filter.roomId)::text IS NULL OR "roomId" = \(filter.roomId))
              AND (\(filter.userId)::text IS NULL OR "userId" = \(filter.userId))
              AND (\(filter.from)::timestamptz IS NULL OR "joinedAt" >= \(filter.from))
              AND (\(filter.to)::timestamptz IS NULL OR "joinedAt" < \(filter.to))
            ORDER BY "id" LIMIT \(limit + 1)
            """).map(Rows.call)
        return Page(cutting: rows, limit: limit) { $0.id ?? 0 }
    }

    public func deleteCall(callId: String) async throws(StorageError) {
        _ = try await count(#"DELETE FROM "call" WHERE "callId" = \#(callId) RETURNING 1"#)
    }

    /// Read with `FOR UPDATE`, change, write back, in one transaction.
    @discardableResult
    public func modifyCall(callId: String, _ change: @escaping @Sendable (inout CallRecord) -> Void)
        async throws(StorageError) -> Bool
    {
        let logger = self.logger
        return try await transaction { connection in
            var found: PostgresRow?
            for try await row in try await connection.query(
                #"SELECT * FROM "call" WHERE "callId" = \#(callId) FOR UPDATE"#, logger: logger) where found == nil {
                found = row
            }
            guard let found else { return false }
            var call = try Rows.call(found)
            change(&call)
            try await connection.query(Self.updateQuery(call), logger: logger)
            return true
        }
    }

    /// One transaction, one UPDATE per change (no read: the change names its fields).
    public func recordCallChanges(_ changes: [CallChange]) async throws(StorageError) {
        guard !changes.isEmpty else { return }
        let logger = self.logger
        try await transaction { connection in
            for change in changes {
                switch change {
                case .established(let callId, let time):
                    try await connection.query("""
                        UPDATE "call" SET "state" = 'established', "establishedAt" = \(time) WHERE "callId" = \(callId)
                        """, logger: logger)
                case .ended(let callId, let time, let cause, let stats):
                    try await connection.query("""
                        UPDATE "call" SET "state" = 'ended', "endedAt" = \(time), "endCause" = \(cause),
                          "serverStats" = \(stats)
                        WHERE "callId" = \(callId)
                        """, logger: logger)
                case .webhookEvent(let event):
                    try await connection.query("""
                        INSERT INTO "webhookEvent"("eventId", "applicationId", "roomId", "type", "subject", "body",
                                                   "createdAt", "fannedOut")
                        SELECT \(event.eventId), "id", \(event.roomId), \(event.type), \(event.callId), \(event.body),
                               \(event.at), FALSE FROM "application" WHERE "key" = \(event.applicationKey)
                        """, logger: logger)
                }
            }
        }
    }

    static func updateQuery(_ call: CallRecord) -> PostgresQuery {
        """
        UPDATE "call" SET "roomId" = \(call.roomId), "userId" = \(call.userId), "displayName" = \(call.displayName),
          "state" = \(call.state), "joinedAt" = \(call.joinedAt), "establishedAt" = \(call.establishedAt),
          "endedAt" = \(call.endedAt), "endCause" = \(call.endCause), "serverStats" = \(call.serverStats),
          "nodeId" = \(call.nodeId), "headers" = \(call.headers)
        WHERE "callId" = \(call.callId)
        """
    }

    /// The insert and the idempotency check are one statement: a concurrent upload with the
    /// same key waits on the unique index and then finds the first one's row.
    public func insertStatistics(_ record: CallStatisticsRecord) async throws(StorageError)
        -> StatisticsInsertOutcome
    {
        let inserted = try await first("""
            INSERT INTO "callStatistics"("statisticsId", "callId", "uploadedBy", "idempotencyKey", "bodySHA256",
                                         "body", "receivedAt")
            VALUES (\(record.statisticsId), \(record.callId), \(record.uploadedBy), \(record.idempotencyKey),
                    \(record.bodySHA256), \(record.body), \(record.receivedAt))
            ON CONFLICT ("callId", "idempotencyKey") DO NOTHING
            RETURNING *
            """)
        if let inserted { return .created(try Rows.statistics(inserted)) }
        let existing = try await first("""
            SELECT * FROM "callStatistics"
            WHERE "callId" = \(record.callId) AND "idempotencyKey" = \(record.idempotencyKey)
            """)
        guard let existing else { throw .unavailable("an upload with this idempotency key vanished") }
        let stored = try Rows.statistics(existing)
        return stored.bodySHA256 == record.bodySHA256 ? .replayed(stored) : .keyReusedWithDifferentBody
    }

    public func statistics(callId: String) async throws(StorageError) -> [CallStatisticsRecord] {
        try await all(#"SELECT * FROM "callStatistics" WHERE "callId" = \#(callId) ORDER BY "id""#)
            .map(Rows.statistics)
    }
}
