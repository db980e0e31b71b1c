import Foundation
import PostgresNIO
import Storage

extension PostgresStore {
    public func insertWebhookEndpoint(_ record: WebhookEndpointRecord) async throws(StorageError) -> WebhookEndpointRecord {
        let row = try await first("""
            INSERT INTO "webhookEndpoint"("endpointId", "applicationId", "url", "secret", "events", "enabled",
                                          "disabledReason", "createdAt")
            VALUES (\(record.endpointId), \(record.applicationId), \(record.url), \(record.secret), \(record.events),
                    \(record.enabled), \(record.disabledReason), \(record.createdAt))
            RETURNING *
            """)
        guard let row else { throw .unavailable("the insert returned no row") }
        return try Self.endpoint(row)
    }

    public func webhookEndpoints(applicationId: Int64) async throws(StorageError) -> [WebhookEndpointRecord] {
        try await all(#"SELECT * FROM "webhookEndpoint" WHERE "applicationId" = \#(applicationId) ORDER BY "id""#)
            .map(Self.endpoint)
    }

    public func webhookEndpoint(endpointId: String) async throws(StorageError) -> WebhookEndpointRecord? {
        try await first(#"SELECT * FROM "webhookEndpoint" WHERE "endpointId" = \#(endpointId)"#).map(Self.endpoint)
    }

    public func updateWebhookEndpoint(_ record: WebhookEndpointRecord) async throws(StorageError) {
        _ = try await count("""
            UPDATE "webhookEndpoint" SET "url" = \(record.url), "secret" = \(record.secret), "events" = \(record.events),
              "enabled" = \(record.enabled), "disabledReason" = \(record.disabledReason)
            WHERE "endpointId" = \(record.endpointId) RETURNING 1
            """)
    }

    public func deleteWebhookEndpoint(endpointId: String) async throws(StorageError) -> Bool {
        try await count(#"DELETE FROM "webhookEndpoint" WHERE "endpointId" = \#(endpointId) RETURNING 1"#) > 0
    }

    public func insertWebhookEvent(_ record: WebhookEventRecord) async throws(StorageError) {
        _ = try await count("""
            INSERT INTO "webhookEvent"("eventId", "applicationId", "roomId", "type", "subject", "body", "createdAt",
                                       "fannedOut")
            VALUES (\(record.eventId), \(record.applicationId), \(record.roomId), \(record.type), \(record.subject),
                    \(record.body), \(record.createdAt), FALSE)
            RETURNING 1
            """)
    }

    @discardableResult
    public func dropUntakenWebhookEvents() async throws(StorageError) -> Int {
        // A fan-out on another node that has already set "fannedOut" holds the row; once it
        // commits, PostgreSQL re-checks this WHERE on the new row and leaves it.
        try await count(PostgresQuery(unsafeSQL: WebhookOutboxSQL.dropUntaken + " RETURNING 1"))
    }

    public func hasWebhookWork() async throws(StorageError) -> Bool {
        try await count(PostgresQuery(unsafeSQL: WebhookOutboxSQL.hasWork)) > 0
    }

    public func unfannedWebhookEvents(limit: Int) async throws(StorageError) -> [WebhookEventRecord] {
        try await all(#"SELECT * FROM "webhookEvent" WHERE NOT "fannedOut" ORDER BY "id" LIMIT \#(limit)"#)
            .map(Self.event)
    }

    /// The UPDATE … WHERE NOT "fannedOut" is the once-only guard: a concurrent fan-out of the
    /// same event on another node waits on the row, then finds it fanned out and adds nothing.
    @discardableResult
    public func fanOutWebhookEvent(rowId: Int64, body: String?, now: Date) async throws(StorageError) -> Int {
        let logger = self.logger
        return try await transaction { connection in
            guard let body else {
                try await connection.query(#"DELETE FROM "webhookEvent" WHERE "id" = \#(rowId) AND NOT "fannedOut""#,
                                           logger: logger)
                return 0
            }
            var event: PostgresRow?
            for try await row in try await connection.query("""
                UPDATE "webhookEvent" SET "fannedOut" = TRUE, "body" = \(body) WHERE "id" = \(rowId) AND NOT "fannedOut"
                RETURNING *
                """, logger: logger) where event == nil { event = row }
            guard let event else { return 0 }
            let record = try Self.event(event)
            let created = try await connection.query("""
                INSERT INTO "webhookDelivery"("eventRowId", "endpointRowId", "orderKey", "state", "attempts",
                                              "nextAttemptAt", "createdAt")
                SELECT \(rowId), "id", \(record.roomId ?? ""), 'pending', 0, \(now), \(now) FROM "webhookEndpoint"
                WHERE "applicationId" = \(record.applicationId) AND "enabled"
                  AND ("events" = '' OR ' ' || "events" || ' ' LIKE \("% \(record.type) %"))
                RETURNING 1
                """, logger: logger).collect().count
            if created == 0 {
                try await connection.query(#"DELETE FROM "webhookEvent" WHERE "id" = \#(rowId)"#, logger: logger)
            }
            return created
        }
    }

    /// `FOR UPDATE OF d SKIP LOCKED`: nodes claiming at once take different deliveries.
    public func claimWebhookDeliveries(now: Date, until: Date, limit: Int) async throws(StorageError) -> [WebhookSend] {
        let logger = self.logger
        return try await transaction { connection in
            let rows = try await connection.query("""
                SELECT d."id" AS "deliveryRowId", d."attempts", e."eventId", e."type", e."body", p."url", p."secret",
                       e."createdAt" AS "eventCreatedAt"
                FROM "webhookDelivery" d
                JOIN "webhookEvent" e ON e."id" = d."eventRowId"
                JOIN "webhookEndpoint" p ON p."id" = d."endpointRowId"
                WHERE d."state" = 'pending' AND d."nextAttemptAt" <= \(now)
                  AND (d."claimedUntil" IS NULL OR d."claimedUntil" < \(now)) AND p."enabled"
                  AND NOT EXISTS (SELECT 1 FROM "webhookDelivery" o WHERE o."endpointRowId" = d."endpointRowId"
                                  AND o."orderKey" = d."orderKey" AND o."state" = 'pending' AND o."id" < d."id")
                ORDER BY d."nextAttemptAt", d."id" LIMIT \(limit)
                FOR UPDATE OF d SKIP LOCKED
                """, logger: logger).collect()
            let sends = try rows.map { row in
                try Rows.record(row) { c in
                    WebhookSend(deliveryRowId: try c["deliveryRowId"], attempts: Int(try c["attempts"] as Int64),
                                eventId: try c["eventId"], type: try c["type"], body: (try c["body"] as String?) ?? "{}",
                                url: try c["url"], secret: try c["secret"], eventCreatedAt: try c["eventCreatedAt"])
                }
            }
            for send in sends {
                try await connection.query(
                    #"UPDATE "webhookDelivery" SET "claimedUntil" = \#(until) WHERE "id" = \#(send.deliveryRowId)"#,
                    logger: logger)
            }
            return sends
        }
    }

    public func recordWebhookAttempt(deliveryRowId: Int64, outcome: WebhookAttemptOutcome, at now: Date)
        async throws(StorageError)
    {
        let change = WebhookAttemptChange(outcome)
        let logger = self.logger
        try await transaction { connection in
            let status = change.status.map(Int64.init)
            var endpoint: Int64?
            for try await row in try await connection.query("""
                UPDATE "webhookDelivery" SET "attempts" = "attempts" + 1, "lastAttemptAt" = \(now),
                  "lastStatus" = \(status), "lastError" = \(change.error), "state" = \(change.state),
                  "nextAttemptAt" = COALESCE(\(change.next)::timestamptz, "nextAttemptAt"), "claimedUntil" = NULL
                WHERE "id" = \(deliveryRowId) RETURNING "endpointRowId"
                """, logger: logger) { endpoint = try row.decode(Int64.self) }
            guard change.disablesEndpoint, let endpoint else { return }
            try await connection.query("""
                UPDATE "webhookEndpoint" SET "enabled" = FALSE, "disabledReason" = \(WebhookAttemptChange.goneReason)
                WHERE "id" = \(endpoint)
                """, logger: logger)
            try await connection.query("""
                UPDATE "webhookDelivery" SET "state" = 'failed', "lastError" = 'endpointDisabled'
                WHERE "endpointRowId" = \(endpoint) AND "state" = 'pending'
                """, logger: logger)
        }
    }

    public func webhookDeliveries(endpointRowId: Int64, after token: PageToken?, limit: Int) async throws(StorageError)
        -> Page<WebhookDeliveryView>
    {
        let rows = try await all("""
            SELECT d.*, e."eventId", e."type", e."roomId" FROM "webhookDelivery" d
            JOIN "webhookEvent" e ON e."id" = d."eventRowId"
            WHERE d."endpointRowId" = \(endpointRowId) AND d."id" > \(token?.afterRowID ?? 0) ORDER BY d."id" LIMIT \(limit + 1)
            """)
        var views: [WebhookDeliveryView] = []
        for row in rows {
            views.append(try Rows.record(row) { c in
                WebhookDeliveryView(
                    deliveryRowId: try c["id"], eventId: try c["eventId"], type: try c["type"], roomId: try c["roomId"],
                    state: try c["state"], attempts: Int(try c["attempts"] as Int64), nextAttemptAt: try c["nextAttemptAt"],
                    lastAttemptAt: try c["lastAttemptAt"], lastStatus: (try c["lastStatus"] as Int64?).map(Int.init),
                    lastError: try c["lastError"], createdAt: try c["createdAt"])
            })
        }
        return Page(cutting: views, limit: limit) { $0.deliveryRowId }
    }

    public func room(rowId: Int64) async throws(StorageError) -> RoomRecord? {
        try await first(#"SELECT * FROM "room" WHERE "id" = \#(rowId)"#).map(Rows.room)
    }

    public func statisticsUpload(rowId: Int64) async throws(StorageError) -> CallStatisticsRecord? {
        try await first(#"SELECT * FROM "callStatistics" WHERE "id" = \#(rowId)"#).map(Rows.statistics)
    }

    static func endpoint(_ row: PostgresRow) throws(StorageError) -> WebhookEndpointRecord {
        try Rows.record(row) { c in
            var record = WebhookEndpointRecord(endpointId: try c["endpointId"], applicationId: try c["applicationId"],
                                               url: try c["url"], secret: try c["secret"], events: [],
                                               createdAt: try c["createdAt"])
            record.events = try c["events"]
            record.id = try c["id"]
            record.enabled = try c["enabled"]
            record.disabledReason = try c["disabledReason"]
            return record
        }
    }

    static func event(_ row: PostgresRow) throws(StorageError) -> WebhookEventRecord {
        try Rows.record(row) { c in
            var record = WebhookEventRecord(eventId: try c["eventId"], applicationId: try c["applicationId"],
                                            roomId: try c["roomId"], type: try c["type"], body: "",
                                            createdAt: try c["createdAt"])
            record.body = try c["body"]
            record.subject = try c["subject"]
            record.id = try c["id"]
            record.fannedOut = try c["fannedOut"]
            return record
        }
    }
}
