/// The webhook tables and the triggers that write the outbox (schema v4).
///
/// The outbox is written by the database itself, in the transaction of the state change it
/// reports: a trigger on each table inserts one `webhookEvent` row per change (a room opened or
/// closed, a call inserted or ended, a statistics upload). A crash can therefore never keep a
/// change and lose its event. The row names its subject (`subject`: the call ID, or the room's
/// or the upload's row ID); the dispatcher builds the body from the subject's record when it
/// fans the event out to the application's endpoints (one `webhookDelivery` each). Events that
/// are not state changes (quality warnings, recordings) are inserted with their body.
extension Schema {
    static let v4 = SchemaMigration(name: "v4-webhooks", steps: [
        .table(TableSpec(name: "webhookEndpoint", columns: [
            ColumnSpec("id", .rowID),
            ColumnSpec("endpointId", .text, unique: true),
            ColumnSpec("applicationId", .integer, references: .cascade("application", "id")),
            ColumnSpec("url", .text),
            // "whsec_" + base64 of the key (Standard Webhooks).
            ColumnSpec("secret", .text),
            // Space-separated event types; empty: every type.
            ColumnSpec("events", .text),
            ColumnSpec("enabled", .boolean, defaultTrue: true),
            ColumnSpec("disabledReason", .text, nullable: true),
            ColumnSpec("createdAt", .datetime),
        ])),
        .table(TableSpec(name: "webhookEvent", columns: [
            ColumnSpec("id", .rowID),
            ColumnSpec("eventId", .text, unique: true),
            ColumnSpec("applicationId", .integer, references: .cascade("application", "id")),
            ColumnSpec("roomId", .text, nullable: true),
            ColumnSpec("type", .text),
            ColumnSpec("subject", .text, nullable: true),
            ColumnSpec("body", .text, nullable: true),
            ColumnSpec("createdAt", .datetime),
            ColumnSpec("fannedOut", .boolean),
        ])),
        .index(IndexSpec(name: "webhookEvent_pending", table: "webhookEvent", columns: ["fannedOut", "id"])),
        .table(TableSpec(name: "webhookDelivery", columns: [
            ColumnSpec("id", .rowID),
            ColumnSpec("eventRowId", .integer, references: .cascade("webhookEvent", "id")),
            ColumnSpec("endpointRowId", .integer, references: .cascade("webhookEndpoint", "id")),
            // Deliveries of one endpoint and one room go out in order ("" for no room).
            ColumnSpec("orderKey", .text),
            // "pending", "delivered" or "failed".
            ColumnSpec("state", .text),
            ColumnSpec("attempts", .integer),
            ColumnSpec("nextAttemptAt", .datetime),
            ColumnSpec("lastAttemptAt", .datetime, nullable: true),
            ColumnSpec("lastStatus", .integer, nullable: true),
            ColumnSpec("lastError", .text, nullable: true),
            ColumnSpec("claimedUntil", .datetime, nullable: true),
            ColumnSpec("createdAt", .datetime),
        ])),
        .index(IndexSpec(name: "webhookDelivery_due", table: "webhookDelivery", columns: ["state", "nextAttemptAt"])),
        .index(IndexSpec(name: "webhookDelivery_order", table: "webhookDelivery",
                         columns: ["endpointRowId", "orderKey", "state", "id"])),
        .index(IndexSpec(name: "webhookDelivery_event", table: "webhookDelivery", columns: ["eventRowId"])),
    ] + outboxTriggers)

    /// One trigger per reported change, in both dialects.
    static let outboxTriggers: [SchemaStep] = [
        trigger("room_started", after: "INSERT", on: "room", when: nil,
                events: [("room.started", "NEW.\"roomId\"", cast("NEW.\"id\""))]),
        trigger("room_ended", after: "UPDATE", on: "room",
                when: "OLD.\"closedAt\" IS NULL AND NEW.\"closedAt\" IS NOT NULL",
                events: [("room.ended", "NEW.\"roomId\"", cast("NEW.\"id\""))]),
        trigger("participant_joined", after: "INSERT", on: "call", when: nil,
                events: [("participant.joined", "NEW.\"roomId\"", "NEW.\"callId\"")]),
        trigger("call_ended", after: "UPDATE", on: "call",
                when: "OLD.\"state\" <> 'ended' AND NEW.\"state\" = 'ended'",
                events: [("participant.left", "NEW.\"roomId\"", "NEW.\"callId\""),
                         ("call.ended", "NEW.\"roomId\"", "NEW.\"callId\"")]),
        trigger("statistics_uploaded", after: "INSERT", on: "callStatistics", when: nil,
                events: [("statistics.uploaded", "(SELECT \"roomId\" FROM \"call\" WHERE \"callId\" = NEW.\"callId\")",
                          cast("NEW.\"id\""))],
                application: "(SELECT \"applicationId\" FROM \"call\" WHERE \"callId\" = NEW.\"callId\")"),
        // A refused join's call is deleted: its event goes with it unless already sent out.
        .raw(sqlite: """
            CREATE TRIGGER "webhook_call_deleted" AFTER DELETE ON "call" BEGIN
              DELETE FROM "webhookEvent" WHERE "subject" = OLD."callId" AND NOT "fannedOut";
            END
            """, postgres: ["""
            CREATE FUNCTION "webhook_call_deleted"() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              DELETE FROM "webhookEvent" WHERE "subject" = OLD."callId" AND NOT "fannedOut";
              RETURN NULL;
            END $$
            """, """
            CREATE TRIGGER "webhook_call_deleted" AFTER DELETE ON "call" FOR EACH ROW EXECUTE FUNCTION "webhook_call_deleted"()
            """]),
    ]

    static func cast(_ expression: String) -> String { "CAST(\(expression) AS TEXT)" }

    /// A trigger inserting one outbox row per `(type, roomId, subject)` of `events`.
    static func trigger(_ name: String, after operation: String, on table: String, when condition: String?,
                        events: [(type: String, room: String, subject: String)],
                        application: String = "NEW.\"applicationId\"") -> SchemaStep {
        func inserts(id: String, now: String) -> String {
            events.map { event in
                """
                INSERT INTO "webhookEvent"("eventId", "applicationId", "roomId", "type", "subject", "createdAt", "fannedOut")
                  VALUES (\(id), \(application), \(event.room), '\(event.type)', \(event.subject), \(now), FALSE);
                """
            }.joined(separator: "\n")
        }
        let quoted = "\"webhook_\(name)\""
        let sqliteWhen = condition.map { " WHEN \($0)" } ?? ""
        let postgresWhen = condition.map { " WHEN (\($0))" } ?? ""
        return .raw(sqlite: """
            CREATE TRIGGER \(quoted) AFTER \(operation) ON "\(table)"\(sqliteWhen) BEGIN
            \(inserts(id: "'msg_' || lower(hex(randomblob(16)))", now: "strftime('%Y-%m-%d %H:%M:%f', 'now')"))
            END
            """, postgres: ["""
            CREATE FUNCTION \(quoted)() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
            \(inserts(id: "'msg_' || replace(gen_random_uuid()::text, '-', '')", now: "clock_timestamp()"))
            RETURN NULL;
            END $$
            """, """
            CREATE TRIGGER \(quoted) AFTER \(operation) ON "\(table)" FOR EACH ROW\(postgresWhen) EXECUTE FUNCTION \(quoted)()
            """])
    }
}
