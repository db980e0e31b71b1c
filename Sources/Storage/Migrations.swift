import GRDB

extension ChorusDatabase {
    /// Versioned schema. Never edit a shipped migration: add the next one.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "serverSecret") { t in
                t.primaryKey("name", .text)
                t.column("value", .blob).notNull()
            }
            try db.create(table: "application") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("key", .text).notNull().unique()
                t.column("secret", .text).notNull()
                t.column("name", .text).notNull()
                t.column("autoCreateRooms", .boolean).notNull().defaults(to: true)
                t.column("createdAt", .datetime).notNull()
            }
            try db.create(table: "userRegistration") { t in
                t.column("applicationId", .integer).notNull()
                    .references("application", onDelete: .cascade)
                t.column("userId", .text).notNull()
                // Canonical decimal of the highest accepted sequence (compared numerically in Swift).
                t.column("lastSequence", .text).notNull()
                t.column("registeredAt", .datetime).notNull()
                t.primaryKey(["applicationId", "userId"])
            }
            try db.create(table: "room") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("applicationId", .integer).notNull()
                    .references("application", onDelete: .cascade)
                t.column("roomId", .text).notNull()
                t.column("maxParticipants", .integer).notNull()
                t.column("mixedSpeakers", .integer).notNull()
                t.column("videoSlots", .integer).notNull()
                t.column("createdAt", .datetime).notNull()
                t.column("closedAt", .datetime)
            }
            // One open room per (application, roomId); a closed room's ID may be used again.
            try db.execute(sql: """
                CREATE UNIQUE INDEX room_open_unique ON room(applicationId, roomId)
                WHERE closedAt IS NULL
                """)
            try db.create(table: "call") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("callId", .text).notNull().unique()
                t.column("applicationId", .integer).notNull()
                    .references("application", onDelete: .cascade)
                t.column("roomId", .text).notNull()
                t.column("userId", .text).notNull()
                t.column("displayName", .text)
                t.column("state", .text).notNull()
                t.column("joinedAt", .datetime).notNull()
                t.column("establishedAt", .datetime)
                t.column("endedAt", .datetime)
                t.column("endCause", .text)
                t.column("serverStats", .text)
            }
            try db.create(index: "call_by_room", on: "call", columns: ["applicationId", "roomId"])
            try db.create(index: "call_by_user", on: "call", columns: ["applicationId", "userId"])
            try db.create(index: "call_by_time", on: "call", columns: ["applicationId", "joinedAt"])
            try db.create(table: "callStatistics") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("statisticsId", .text).notNull().unique()
                t.column("callId", .text).notNull().references("call", column: "callId", onDelete: .cascade)
                t.column("uploadedBy", .text).notNull()
                t.column("idempotencyKey", .text)
                t.column("bodySHA256", .text).notNull()
                t.column("body", .text).notNull()
                t.column("receivedAt", .datetime).notNull()
                t.uniqueKey(["callId", "idempotencyKey"])
            }
        }
        return migrator
    }
}
