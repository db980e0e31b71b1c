import Foundation
import PostgresNIO
import Storage

extension PostgresStore {
    public func insertRoom(_ record: RoomRecord) async throws(StorageError) -> RoomRecord {
        let row = try await first("""
            INSERT INTO "room"("applicationId", "roomId", "maxParticipants", "mixedSpeakers", "videoSlots",
                               "createdAt", "closedAt")
            VALUES (\(record.applicationId), \(record.roomId), \(record.maxParticipants), \(record.mixedSpeakers),
                    \(record.videoSlots), \(record.createdAt), \(record.closedAt))
            RETURNING *
            """)
        guard let row else { throw .unavailable("the insert returned no row") }
        return try Rows.room(row)
    }

    public func openRoom(applicationId: Int64, roomId: String) async throws(StorageError) -> RoomRecord? {
        try await first("""
            SELECT * FROM "room"
            WHERE "applicationId" = \(applicationId) AND "roomId" = \(roomId) AND "closedAt" IS NULL
            """).map(Rows.room)
    }

    public func openRooms(applicationId: Int64, after token: PageToken?, limit: Int) async throws(StorageError)
        -> Page<RoomRecord>
    {
        let rows = try await all("""
            SELECT * FROM "room"
            WHERE "applicationId" = \(applicationId) AND "closedAt" IS NULL AND "id" > \(token?.afterRowID ?? 0)
            ORDER BY "id" LIMIT \(limit + 1)
            """).map(Rows.room)
        return Page(cutting: rows, limit: limit) { $0.id ?? 0 }
    }

    public func allOpenRooms() async throws(StorageError) -> [(RoomRecord, ApplicationRecord)] {
        let rooms = try await all(#"SELECT * FROM "room" WHERE "closedAt" IS NULL ORDER BY "id""#).map(Rows.room)
        var apps: [Int64: ApplicationRecord] = [:]
        for app in try await applications() { apps[app.id ?? -1] = app }
        return rooms.compactMap { room in apps[room.applicationId].map { (room, $0) } }
    }

    /// Only an open room's settings change: the WHERE keeps a concurrent close closed.
    public func updateRoomSettings(_ record: RoomRecord) async throws(StorageError) -> RoomRecord? {
        let changed = try await count("""
            UPDATE "room" SET "maxParticipants" = \(record.maxParticipants),
              "mixedSpeakers" = \(record.mixedSpeakers), "videoSlots" = \(record.videoSlots)
            WHERE "id" = \(record.id ?? -1) AND "closedAt" IS NULL
            RETURNING 1
            """)
        return changed == 1 ? record : nil
    }

    public func closeRoom(applicationId: Int64, roomId: String, at now: Date) async throws(StorageError)
        -> RoomRecord?
    {
        try await first("""
            UPDATE "room" SET "closedAt" = \(now)
            WHERE "applicationId" = \(applicationId) AND "roomId" = \(roomId) AND "closedAt" IS NULL
            RETURNING *
            """).map(Rows.room)
    }
}
