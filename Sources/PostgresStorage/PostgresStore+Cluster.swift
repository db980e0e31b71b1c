import Foundation
import Logging
import PostgresNIO
import Storage

/// The cluster on PostgreSQL. Placement of one room is serialized by a transaction-scoped
/// advisory lock on the room's key, so concurrent first joins on different nodes all read the
/// lease the first one wrote; a lost node is claimed by the one sweeper whose UPDATE flips its
/// state (the row lock decides).
extension PostgresStore {
    /// First key of the advisory locks that serialize placements ("Chor").
    static let placementLock: Int32 = 0x4368_6F72

    public func registerNode(_ node: NodeRecord) async throws(StorageError) -> [CallRecord] {
        let logger = self.logger
        return try await transaction { connection in
            let previous = try await Self.rows(connection, logger, """
                SELECT "heartbeatAt" FROM "node" WHERE "nodeId" = \(node.nodeId) FOR UPDATE
                """).first
            let lastSeen = try previous.map { try $0.decode(Date.self) } ?? node.startedAt
            let ended = try await Self.retire(connection, logger, nodeId: node.nodeId, endedAt: lastSeen)
            try await connection.query(Self.upsert(node, keepDraining: false), logger: logger)
            return ended
        }
    }

    public func heartbeat(_ node: NodeRecord, leaseDuration: TimeInterval) async throws(StorageError)
        -> HeartbeatOutcome
    {
        let logger = self.logger
        let expires = node.heartbeatAt.addingTimeInterval(leaseDuration)
        return try await transaction { connection in
            guard let written = try await Self.rows(connection, logger, Self.upsert(node, keepDraining: true)).first else {
                // The row is another run's: this one wrote nothing and renews nothing.
                let holder = try await Self.rows(connection, logger, #"SELECT * FROM "node" WHERE "nodeId" = \#(node.nodeId)"#)
                    .first.map(Rows.node)
                return HeartbeatOutcome(renewed: [], closed: [], draining: false, supersededBy: holder)
            }
            let state = try written.decode(String.self)
            let closed = try await Self.rows(connection, logger, """
                DELETE FROM "roomLease" l WHERE l."nodeId" = \(node.nodeId) AND NOT EXISTS (
                  SELECT 1 FROM "room" r WHERE r."applicationId" = l."applicationId" AND r."roomId" = l."roomId"
                    AND r."closedAt" IS NULL)
                RETURNING *
                """).map(Rows.lease)
            var renewed: [RoomLease] = []
            for row in try await Self.rows(connection, logger, """
                UPDATE "roomLease" SET "expiresAt" = \(expires) WHERE "nodeId" = \(node.nodeId)
                RETURNING "applicationId", "roomId"
                """) {
                let (application, room) = try row.decode((Int64, String).self)
                renewed.append(RoomLease(applicationId: application, roomId: room, nodeId: node.nodeId, expiresAt: expires))
            }
            return HeartbeatOutcome(renewed: renewed, closed: closed, draining: state == "draining")
        }
    }

    public func nodes() async throws(StorageError) -> [NodeRecord] {
        try await all(#"SELECT * FROM "node" ORDER BY "nodeId""#).map(Rows.node)
    }

    public func drainNode(_ nodeId: String) async throws(StorageError) -> Bool {
        try await count("""
            UPDATE "node" SET "state" = 'draining' WHERE "nodeId" = \(nodeId) AND "state" IN ('up', 'draining')
            RETURNING 1
            """) == 1
    }

    public func stopNode(_ nodeId: String) async throws(StorageError) {
        let logger = self.logger
        try await transaction { connection in
            try await connection.query(#"UPDATE "node" SET "state" = 'stopped' WHERE "nodeId" = \#(nodeId)"#,
                                       logger: logger)
            try await connection.query(#"DELETE FROM "roomLease" WHERE "nodeId" = \#(nodeId)"#, logger: logger)
        }
    }

    public func roomLease(applicationId: Int64, roomId: String, now: Date) async throws(StorageError) -> RoomLease? {
        try await first("""
            SELECT * FROM "roomLease"
            WHERE "applicationId" = \(applicationId) AND "roomId" = \(roomId) AND "expiresAt" > \(now)
            """).map(Rows.lease)
    }

    public func placeRoom(applicationId: Int64, roomId: String, now: Date, liveAfter: Date,
                          leaseDuration: TimeInterval) async throws(StorageError) -> RoomLease?
    {
        let logger = self.logger
        let expires = now.addingTimeInterval(leaseDuration)
        let roomKey = "\(applicationId)/\(roomId)"
        return try await transaction { connection in
            try await connection.query(
                "SELECT pg_advisory_xact_lock(\(Self.placementLock), hashtext(\(roomKey)))", logger: logger)
            if let held = try await Self.rows(connection, logger, """
                SELECT * FROM "roomLease"
                WHERE "applicationId" = \(applicationId) AND "roomId" = \(roomId) AND "expiresAt" > \(now)
                """).first {
                return try Rows.lease(held)
            }
            guard let chosen = try await Self.rows(connection, logger, """
                SELECT n."nodeId" FROM "node" n WHERE n."state" = 'up' AND n."heartbeatAt" > \(liveAfter)
                ORDER BY (SELECT count(*) FROM "roomLease" l WHERE l."nodeId" = n."nodeId" AND l."expiresAt" > \(now)),
                         n."participants", n."nodeId"
                LIMIT 1
                """).first
            else { return nil }
            let nodeId = try chosen.decode(String.self)
            try await connection.query("""
                INSERT INTO "roomLease"("applicationId", "roomId", "nodeId", "takenAt", "expiresAt")
                VALUES (\(applicationId), \(roomId), \(nodeId), \(now), \(expires))
                ON CONFLICT ("applicationId", "roomId") DO UPDATE SET "nodeId" = excluded."nodeId",
                  "takenAt" = excluded."takenAt", "expiresAt" = excluded."expiresAt"
                """, logger: logger)
            return RoomLease(applicationId: applicationId, roomId: roomId, nodeId: nodeId, expiresAt: expires)
        }
    }

    public func releaseRoomLease(applicationId: Int64, roomId: String, nodeId: String) async throws(StorageError) {
        _ = try await count("""
            DELETE FROM "roomLease"
            WHERE "applicationId" = \(applicationId) AND "roomId" = \(roomId) AND "nodeId" = \(nodeId)
            RETURNING 1
            """)
    }

    public func sweepLostNodes(staleBefore: Date) async throws(StorageError) -> [LostNode] {
        let logger = self.logger
        return try await transaction { connection in
            var lost: [LostNode] = []
            for row in try await Self.rows(connection, logger, """
                UPDATE "node" SET "state" = 'lost'
                WHERE "state" IN ('up', 'draining') AND "heartbeatAt" < \(staleBefore)
                RETURNING "nodeId", "heartbeatAt"
                """) {
                let (nodeId, heartbeat) = try row.decode((String, Date).self)
                let ended = try await Self.retire(connection, logger, nodeId: nodeId, endedAt: heartbeat)
                lost.append(LostNode(nodeId: nodeId, lastHeartbeat: heartbeat, endedCalls: ended))
            }
            return lost
        }
    }

    /// Ends a node's open calls `nodeLost` at `endedAt` (never before they joined) and drops
    /// its leases.
    static func retire(_ connection: PostgresConnection, _ logger: Logger, nodeId: String, endedAt: Date)
        async throws -> [CallRecord]
    {
        var ended: [CallRecord] = []
        for row in try await rows(connection, logger, """
            UPDATE "call" SET "state" = 'ended', "endCause" = 'nodeLost',
              "endedAt" = GREATEST(\(endedAt)::timestamptz, "joinedAt")
            WHERE "nodeId" = \(nodeId) AND "endedAt" IS NULL
            RETURNING *
            """) {
            ended.append(try Rows.call(row))
        }
        try await connection.query(#"DELETE FROM "roomLease" WHERE "nodeId" = \#(nodeId)"#, logger: logger)
        return ended
    }

    /// Inserts or updates a node's row, returning its state. A heartbeat (`keepDraining`) keeps
    /// a drain that another node asked for and the first start time, and writes only over its
    /// own run's row (no row comes back otherwise); a registration takes the row over.
    static func upsert(_ node: NodeRecord, keepDraining: Bool) -> PostgresQuery {
        """
        INSERT INTO "node"("nodeId", "advertiseUrl", "mediaAddresses", "state", "startedAt", "heartbeatAt",
                           "participants", "rooms", "cpuPercent", "instanceId", "processRef")
        VALUES (\(node.nodeId), \(node.advertiseUrl), \(node.mediaAddresses), \(node.state), \(node.startedAt),
                \(node.heartbeatAt), \(node.participants), \(node.rooms), \(node.cpuPercent), \(node.instanceId),
                \(node.processRef))
        ON CONFLICT ("nodeId") DO UPDATE SET "advertiseUrl" = excluded."advertiseUrl",
          "mediaAddresses" = excluded."mediaAddresses",
          "state" = CASE WHEN \(keepDraining) AND "node"."state" = 'draining' THEN 'draining' ELSE excluded."state" END,
          "startedAt" = CASE WHEN \(keepDraining) THEN "node"."startedAt" ELSE excluded."startedAt" END,
          "heartbeatAt" = excluded."heartbeatAt", "participants" = excluded."participants",
          "rooms" = excluded."rooms", "cpuPercent" = excluded."cpuPercent",
          "instanceId" = excluded."instanceId", "processRef" = excluded."processRef"
        WHERE NOT \(keepDraining) OR "node"."instanceId" IS NULL OR "node"."instanceId" = excluded."instanceId"
        RETURNING "state"
        """
    }

    static func rows(_ connection: PostgresConnection, _ logger: Logger, _ query: PostgresQuery) async throws
        -> [PostgresRow]
    {
        try await connection.query(query, logger: logger).collect()
    }
}
