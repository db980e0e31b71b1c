import Foundation
import GRDB

/// A room as stored: its settings and lifetime. The live state is the `Room` actor; this row
/// is what survives a restart and what listings page through.
public struct RoomRecord: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "room"
    public var id: Int64?
    public var applicationId: Int64
    public var roomId: String
    public var maxParticipants: Int
    public var mixedSpeakers: Int
    public var videoSlots: Int
    public var createdAt: Date
    public var closedAt: Date?

    public init(applicationId: Int64, roomId: String, maxParticipants: Int, mixedSpeakers: Int,
                videoSlots: Int, createdAt: Date) {
        self.applicationId = applicationId
        self.roomId = roomId
        self.maxParticipants = maxParticipants
        self.mixedSpeakers = mixedSpeakers
        self.videoSlots = videoSlots
        self.createdAt = createdAt
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }
}

extension SQLiteStore {
    /// Stores a new open room; `.conflict` when an open room with that ID exists.
    public func insertRoom(_ record: RoomRecord) async throws(StorageError) -> RoomRecord {
        try await insert(record)
    }

    public func openRoom(applicationId: Int64, roomId: String) async throws(StorageError) -> RoomRecord? {
        try await read { db in
            try RoomRecord
                .filter(Column("applicationId") == applicationId && Column("roomId") == roomId
                        && Column("closedAt") == nil)
                .fetchOne(db)
        }
    }

    /// Open rooms of one application in creation order, `limit` per page.
    public func openRooms(applicationId: Int64, after token: PageToken?, limit: Int) async throws(StorageError)
        -> Page<RoomRecord>
    {
        try await read { db in
            let rows = try RoomRecord
                .filter(Column("applicationId") == applicationId && Column("closedAt") == nil
                        && Column("id") > (token?.afterRowID ?? 0))
                .order(Column("id"))
                .limit(limit + 1)
                .fetchAll(db)
            return Self.page(rows, limit: limit) { $0.id ?? 0 }
        }
    }

    /// Every open room of every application, for reloading the registry at start.
    public func allOpenRooms() async throws(StorageError) -> [(RoomRecord, ApplicationRecord)] {
        try await read { db in
            let rooms = try RoomRecord.filter(Column("closedAt") == nil).order(Column("id")).fetchAll(db)
            var apps: [Int64: ApplicationRecord] = [:]
            for app in try ApplicationRecord.fetchAll(db) { apps[app.id ?? -1] = app }
            return rooms.compactMap { room in apps[room.applicationId].map { (room, $0) } }
        }
    }

    /// Saves new settings of a room that is still open; nil when it was closed meanwhile (a
    /// whole-row update would write back the `closedAt = nil` it read and reopen the room).
    public func updateRoomSettings(_ record: RoomRecord) async throws(StorageError) -> RoomRecord? {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE room SET maxParticipants = ?, mixedSpeakers = ?, videoSlots = ?
                    WHERE id = ? AND closedAt IS NULL
                    """,
                arguments: [record.maxParticipants, record.mixedSpeakers, record.videoSlots, record.id])
            return db.changesCount == 1 ? record : nil
        }
    }

    /// Marks an open room closed; returns the closed row, nil when none was open.
    public func closeRoom(applicationId: Int64, roomId: String, at now: Date) async throws(StorageError)
        -> RoomRecord?
    {
        try await write { db in
            guard var room = try RoomRecord
                .filter(Column("applicationId") == applicationId && Column("roomId") == roomId
                        && Column("closedAt") == nil)
                .fetchOne(db)
            else { return nil }
            room.closedAt = now
            try room.update(db)
            return room
        }
    }

    /// Cuts `limit + 1` fetched rows into a page and the token for the next one.
    static func page<T>(_ rows: [T], limit: Int, rowID: (T) -> Int64) -> Page<T> {
        Page(cutting: rows, limit: limit, rowID: rowID)
    }
}
