import Foundation
import GRDB

/// The cluster on SQLite: one writer serializes every step, so each is simply one transaction.
extension SQLiteStore {
    public func registerNode(_ node: NodeRecord) async throws(StorageError) -> [CallRecord] {
        try await write { db in
            let previous = try NodeRecord.fetchOne(db, key: node.nodeId)
            let ended = try Self.retire(db, nodeId: node.nodeId, endedAt: previous?.heartbeatAt ?? node.startedAt)
            try node.save(db)
            return ended
        }
    }

    public func heartbeat(_ node: NodeRecord, leaseDuration: TimeInterval) async throws(StorageError)
        -> HeartbeatOutcome
    {
        try await write { db in
            var row = node
            let stored = try NodeRecord.fetchOne(db, key: node.nodeId)
            if let stored, let held = stored.instanceId, held != node.instanceId {
                return HeartbeatOutcome(renewed: [], closed: [], draining: false, supersededBy: stored)
            }
            if stored?.state == "draining" { row.state = "draining" }
            if let stored { row.startedAt = stored.startedAt }
            try row.save(db)
            let closed = try Row.fetchAll(db, sql: """
                DELETE FROM roomLease WHERE nodeId = ? AND NOT EXISTS (
                  SELECT 1 FROM room WHERE room.applicationId = roomLease.applicationId
                    AND room.roomId = roomLease.roomId AND room.closedAt IS NULL)
                RETURNING applicationId, roomId, expiresAt
                """, arguments: [node.nodeId]).map { row in
                RoomLease(applicationId: row["applicationId"], roomId: row["roomId"], nodeId: node.nodeId,
                          expiresAt: row["expiresAt"])
            }
            let expires = node.heartbeatAt.addingTimeInterval(leaseDuration)
            try db.execute(sql: "UPDATE roomLease SET expiresAt = ? WHERE nodeId = ?",
                           arguments: [expires, node.nodeId])
            let rows = try Row.fetchAll(db, sql: "SELECT applicationId, roomId FROM roomLease WHERE nodeId = ?",
                                        arguments: [node.nodeId])
            let renewed = rows.map { row in
                RoomLease(applicationId: row["applicationId"], roomId: row["roomId"], nodeId: node.nodeId,
                          expiresAt: expires)
            }
            return HeartbeatOutcome(renewed: renewed, closed: closed, draining: row.state == "draining")
        }
    }

    public func nodes() async throws(StorageError) -> [NodeRecord] {
        try await read { db in try NodeRecord.order(Column("nodeId")).fetchAll(db) }
    }

    public func drainNode(_ nodeId: String) async throws(StorageError) -> Bool {
        try await write { db in
            try db.execute(sql: "UPDATE node SET state = 'draining' WHERE nodeId = ? AND state IN ('up', 'draining')",
                           arguments: [nodeId])
            return db.changesCount == 1
        }
    }

    public func stopNode(_ nodeId: String) async throws(StorageError) {
        try await write { db in
            try db.execute(sql: "UPDATE node SET state = 'stopped' WHERE nodeId = ?", arguments: [nodeId])
            try db.execute(sql: "DELETE FROM roomLease WHERE nodeId = ?", arguments: [nodeId])
        }
    }

    public func roomLease(applicationId: Int64, roomId: String, now: Date) async throws(StorageError) -> RoomLease? {
        try await read { db in try Self.validLease(db, applicationId, roomId, now) }
    }

    public func placeRoom(applicationId: Int64, roomId: String, now: Date, liveAfter: Date,
                          leaseDuration: TimeInterval) async throws(StorageError) -> RoomLease?
    {
        try await write { db in
            if let held = try Self.validLease(db, applicationId, roomId, now) { return held }
            guard let nodeId = try String.fetchOne(db, sql: """
                SELECT nodeId FROM node WHERE state = 'up' AND heartbeatAt > ?
                ORDER BY (SELECT COUNT(*) FROM roomLease l WHERE l.nodeId = node.nodeId AND l.expiresAt > ?),
                         participants, nodeId
                LIMIT 1
                """, arguments: [liveAfter, now])
            else { return nil }
            let expires = now.addingTimeInterval(leaseDuration)
            try db.execute(sql: """
                INSERT INTO roomLease(applicationId, roomId, nodeId, takenAt, expiresAt) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(applicationId, roomId) DO UPDATE SET nodeId = excluded.nodeId,
                  takenAt = excluded.takenAt, expiresAt = excluded.expiresAt
                """, arguments: [applicationId, roomId, nodeId, now, expires])
            return RoomLease(applicationId: applicationId, roomId: roomId, nodeId: nodeId, expiresAt: expires)
        }
    }

    public func releaseRoomLease(applicationId: Int64, roomId: String, nodeId: String) async throws(StorageError) {
        try await write { db in
            try db.execute(sql: "DELETE FROM roomLease WHERE applicationId = ? AND roomId = ? AND nodeId = ?",
                           arguments: [applicationId, roomId, nodeId])
        }
    }

    public func sweepLostNodes(staleBefore: Date) async throws(StorageError) -> [LostNode] {
        try await write { db in
            let stale = try NodeRecord.filter(
                ["up", "draining"].contains(Column("state")) && Column("heartbeatAt") < staleBefore).fetchAll(db)
            var lost: [LostNode] = []
            for node in stale {
                try db.execute(sql: "UPDATE node SET state = 'lost' WHERE nodeId = ?", arguments: [node.nodeId])
                let ended = try Self.retire(db, nodeId: node.nodeId, endedAt: node.heartbeatAt)
                lost.append(LostNode(nodeId: node.nodeId, lastHeartbeat: node.heartbeatAt, endedCalls: ended))
            }
            return lost
        }
    }

    /// Ends a node's open calls `nodeLost` at `endedAt` and drops its leases.
    static func retire(_ db: Database, nodeId: String, endedAt: Date) throws -> [CallRecord] {
        var calls = try CallRecord.filter(Column("nodeId") == nodeId && Column("endedAt") == nil).fetchAll(db)
        for index in calls.indices {
            calls[index].state = "ended"
            calls[index].endCause = "nodeLost"
            calls[index].endedAt = max(endedAt, calls[index].joinedAt)
            try calls[index].update(db)
        }
        try db.execute(sql: "DELETE FROM roomLease WHERE nodeId = ?", arguments: [nodeId])
        return calls
    }

    static func validLease(_ db: Database, _ applicationId: Int64, _ roomId: String, _ now: Date) throws -> RoomLease? {
        guard let row = try Row.fetchOne(db, sql: """
            SELECT nodeId, expiresAt FROM roomLease WHERE applicationId = ? AND roomId = ? AND expiresAt > ?
            """, arguments: [applicationId, roomId, now])
        else { return nil }
        return RoomLease(applicationId: applicationId, roomId: roomId, nodeId: row["nodeId"], expiresAt: row["expiresAt"])
    }
}
