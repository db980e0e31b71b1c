import Foundation
import GRDB

extension SQLiteStore {
    public func insertWebhookEndpoint(_ record: WebhookEndpointRecord) async throws(StorageError) -> WebhookEndpointRecord {
        try await insert(record)
    }

    public func webhookEndpoints(applicationId: Int64) async throws(StorageError) -> [WebhookEndpointRecord] {
        try await read { db in
            try WebhookEndpointRecord.filter(Column("applicationId") == applicationId).order(Column("id")).fetchAll(db)
        }
    }

    public func webhookEndpoint(endpointId: String) async throws(StorageError) -> WebhookEndpointRecord? {
        try await read { db in try WebhookEndpointRecord.filter(Column("endpointId") == endpointId).fetchOne(db) }
    }

    public func updateWebhookEndpoint(_ record: WebhookEndpointRecord) async throws(StorageError) {
        try await write { db in try record.update(db) }
    }

    public func deleteWebhookEndpoint(endpointId: String) async throws(StorageError) -> Bool {
        try await write { db in try WebhookEndpointRecord.filter(Column("endpointId") == endpointId).deleteAll(db) > 0 }
    }

    public func insertWebhookEvent(_ record: WebhookEventRecord) async throws(StorageError) {
        _ = try await insert(record)
    }

    @discardableResult
    public func dropUntakenWebhookEvents() async throws(StorageError) -> Int {
        try await write { db in
            try db.execute(sql: WebhookOutboxSQL.dropUntaken)
            return db.changesCount
        }
    }

    public func hasWebhookWork() async throws(StorageError) -> Bool {
        try await read { db in try Row.fetchOne(db, sql: WebhookOutboxSQL.hasWork) != nil }
    }

    public func unfannedWebhookEvents(limit: Int) async throws(StorageError) -> [WebhookEventRecord] {
        try await read { db in
            try WebhookEventRecord.filter(Column("fannedOut") == false).order(Column("id")).limit(limit).fetchAll(db)
        }
    }

    @discardableResult
    public func fanOutWebhookEvent(rowId: Int64, body: String?, now: Date) async throws(StorageError) -> Int {
        try await write { db in
            guard let event = try WebhookEventRecord.fetchOne(db, key: rowId), !event.fannedOut else { return 0 }
            guard let body else {
                try db.execute(sql: #"DELETE FROM "webhookEvent" WHERE "id" = ?"#, arguments: [rowId])
                return 0
            }
            try db.execute(sql: #"UPDATE "webhookEvent" SET "fannedOut" = TRUE, "body" = ? WHERE "id" = ?"#,
                           arguments: [body, rowId])
            try db.execute(sql: """
                INSERT INTO "webhookDelivery"("eventRowId", "endpointRowId", "orderKey", "state", "attempts",
                                              "nextAttemptAt", "createdAt")
                SELECT ?, "id", ?, 'pending', 0, ?, ? FROM "webhookEndpoint"
                WHERE "applicationId" = ? AND "enabled" AND ("events" = '' OR ' ' || "events" || ' ' LIKE ?)
                """, arguments: [rowId, event.roomId ?? "", now, now, event.applicationId, "% \(event.type) %"])
            let created = db.changesCount
            if created == 0 { try db.execute(sql: #"DELETE FROM "webhookEvent" WHERE "id" = ?"#, arguments: [rowId]) }
            return created
        }
    }

    public func claimWebhookDeliveries(now: Date, until: Date, limit: Int) async throws(StorageError) -> [WebhookSend] {
        try await write { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT d."id" AS "deliveryRowId", d."attempts", e."eventId", e."type", e."body", p."url", p."secret",
                       e."createdAt" AS "eventCreatedAt"
                FROM "webhookDelivery" d
                JOIN "webhookEvent" e ON e."id" = d."eventRowId"
                JOIN "webhookEndpoint" p ON p."id" = d."endpointRowId"
                WHERE d."state" = 'pending' AND d."nextAttemptAt" <= ?
                  AND (d."claimedUntil" IS NULL OR d."claimedUntil" < ?) AND p."enabled"
                  AND NOT EXISTS (SELECT 1 FROM "webhookDelivery" o WHERE o."endpointRowId" = d."endpointRowId"
                                  AND o."orderKey" = d."orderKey" AND o."state" = 'pending' AND o."id" < d."id")
                ORDER BY d."nextAttemptAt", d."id" LIMIT ?
                """, arguments: [now, now, limit])
            let sends = rows.map { row in
                WebhookSend(deliveryRowId: row["deliveryRowId"], attempts: row["attempts"], eventId: row["eventId"],
                            type: row["type"], body: row["body"] ?? "{}", url: row["url"], secret: row["secret"],
                            eventCreatedAt: row["eventCreatedAt"])
            }
            for send in sends {
                try db.execute(sql: #"UPDATE "webhookDelivery" SET "claimedUntil" = ? WHERE "id" = ?"#,
                               arguments: [until, send.deliveryRowId])
            }
            return sends
        }
    }

    public func recordWebhookAttempt(deliveryRowId: Int64, outcome: WebhookAttemptOutcome, at now: Date)
        async throws(StorageError)
    {
        let change = WebhookAttemptChange(outcome)
        try await write { db in
            try db.execute(sql: """
                UPDATE "webhookDelivery" SET "attempts" = "attempts" + 1, "lastAttemptAt" = ?, "lastStatus" = ?,
                  "lastError" = ?, "state" = ?, "nextAttemptAt" = COALESCE(?, "nextAttemptAt"), "claimedUntil" = NULL
                WHERE "id" = ?
                """, arguments: [now, change.status, change.error, change.state, change.next, deliveryRowId])
            guard change.disablesEndpoint else { return }
            guard let endpoint = try Int64.fetchOne(
                db, sql: #"SELECT "endpointRowId" FROM "webhookDelivery" WHERE "id" = ?"#, arguments: [deliveryRowId])
            else { return }
            try db.execute(sql: """
                UPDATE "webhookEndpoint" SET "enabled" = FALSE, "disabledReason" = ? WHERE "id" = ?
                """, arguments: [WebhookAttemptChange.goneReason, endpoint])
            try db.execute(sql: """
                UPDATE "webhookDelivery" SET "state" = 'failed', "lastError" = 'endpointDisabled'
                WHERE "endpointRowId" = ? AND "state" = 'pending'
                """, arguments: [endpoint])
        }
    }

    public func webhookDeliveries(endpointRowId: Int64, after token: PageToken?, limit: Int) async throws(StorageError)
        -> Page<WebhookDeliveryView>
    {
        try await read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT d.*, e."eventId", e."type", e."roomId" FROM "webhookDelivery" d
                JOIN "webhookEvent" e ON e."id" = d."eventRowId"
                WHERE d."endpointRowId" = ? AND d."id" > ? ORDER BY d."id" LIMIT ?
                """, arguments: [endpointRowId, token?.afterRowID ?? 0, limit + 1])
            let views = rows.map { row in
                WebhookDeliveryView(
                    deliveryRowId: row["id"], eventId: row["eventId"], type: row["type"], roomId: row["roomId"],
                    state: row["state"], attempts: row["attempts"], nextAttemptAt: row["nextAttemptAt"],
                    lastAttemptAt: row["lastAttemptAt"], lastStatus: row["lastStatus"], lastError: row["lastError"],
                    createdAt: row["createdAt"])
            }
            return Self.page(views, limit: limit) { $0.deliveryRowId }
        }
    }

    public func room(rowId: Int64) async throws(StorageError) -> RoomRecord? {
        try await read { db in try RoomRecord.fetchOne(db, key: rowId) }
    }

    public func statisticsUpload(rowId: Int64) async throws(StorageError) -> CallStatisticsRecord? {
        try await read { db in try CallStatisticsRecord.fetchOne(db, key: rowId) }
    }
}

/// What one attempt's outcome writes, the same in every store.
public struct WebhookAttemptChange: Sendable {
    public static let goneReason = "the endpoint answered 410 Gone"
    public let state: String
    public let status: Int?
    public let error: String?
    public let next: Date?
    public let disablesEndpoint: Bool

    public init(_ outcome: WebhookAttemptOutcome) {
        switch outcome {
        case .delivered(let status):
            (state, self.status, error, next, disablesEndpoint) = ("delivered", status, nil, nil, false)
        case .retry(let status, let error, let next):
            (state, self.status, self.error, self.next, disablesEndpoint) = ("pending", status, error, next, false)
        case .failed(let status, let error):
            (state, self.status, self.error, next, disablesEndpoint) = ("failed", status, error, nil, false)
        case .gone:
            (state, status, error, next, disablesEndpoint) = ("failed", 410, "endpointGone", nil, true)
        }
    }
}

extension SQLiteStore {
    /// SQLite has one writer connection, so an observer on it sees every outbox insert: the
    /// triggers' and `insertWebhookEvent`'s. The dispatcher is woken at each commit instead of
    /// polling the file five times a second (about 5 % of an otherwise idle server's CPU).
    public func observeWebhookEventInserts(_ handler: @escaping @Sendable () -> Void) -> Bool {
        writer.add(transactionObserver: OutboxInsertObserver(handler: handler), extent: .databaseLifetime)
        return true
    }
}

/// Tells, after a commit, that the transaction inserted into `webhookEvent`.
///
/// `@unchecked Sendable`: GRDB calls it only on the writer connection's serial queue, which is
/// the only place `inserted` is read or written; `handler` is itself `Sendable`.
private final class OutboxInsertObserver: TransactionObserver, @unchecked Sendable {
    let handler: @Sendable () -> Void
    private var inserted = false

    init(handler: @escaping @Sendable () -> Void) { self.handler = handler }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        if case .insert(let table) = eventKind { return table == WebhookEventRecord.databaseTableName }
        return false
    }

    func databaseDidChange(with event: DatabaseEvent) {
        inserted = true
        stopObservingDatabaseChangesUntilNextTransaction()
    }

    func databaseDidCommit(_ db: Database) {
        if inserted { handler() }
        inserted = false
    }

    func databaseDidRollback(_ db: Database) { inserted = false }
}
