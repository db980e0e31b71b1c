import Foundation
import PostgresNIO
import Storage

/// Turns the rows PostgreSQL returns into the store's records (columns by name, as the schema
/// names them); a row that does not decode is `.unavailable`, never a crash.
enum Rows {
    static func decode<T: PostgresDecodable>(_ row: PostgresRow?, _ column: String, _ type: T.Type)
        throws(StorageError) -> T?
    {
        guard let row else { return nil }
        do {
            return try row.makeRandomAccess()[column].decode(T.self)
        } catch {
            throw .unavailable("column \(column) does not decode as \(T.self)")
        }
    }

    /// Decodes with a closure over the random-access row, mapping decoding errors.
    static func record<R>(_ row: PostgresRow, _ make: (Cells) throws -> R) throws(StorageError) -> R {
        do {
            return try make(Cells(row: row.makeRandomAccess()))
        } catch let error as StorageError {
            throw error
        } catch {
            throw .unavailable("a stored row does not decode: \(error)")
        }
    }

    static func application(_ row: PostgresRow) throws(StorageError) -> ApplicationRecord {
        try record(row) { c in
            ApplicationRecord(id: try c["id"], key: try c["key"], secret: try c["secret"], name: try c["name"],
                              autoCreateRooms: try c["autoCreateRooms"], createdAt: try c["createdAt"])
        }
    }

    static func room(_ row: PostgresRow) throws(StorageError) -> RoomRecord {
        try record(row) { c in
            var room = RoomRecord(applicationId: try c["applicationId"], roomId: try c["roomId"],
                                  maxParticipants: try c["maxParticipants"], mixedSpeakers: try c["mixedSpeakers"],
                                  videoSlots: try c["videoSlots"], createdAt: try c["createdAt"])
            room.id = try c["id"]
            room.closedAt = try c["closedAt"]
            return room
        }
    }

    static func call(_ row: PostgresRow) throws(StorageError) -> CallRecord {
        try record(row) { c in
            var call = CallRecord(callId: try c["callId"], applicationId: try c["applicationId"],
                                  roomId: try c["roomId"], userId: try c["userId"],
                                  displayName: try c["displayName"], joinedAt: try c["joinedAt"])
            call.id = try c["id"]
            call.state = try c["state"]
            call.establishedAt = try c["establishedAt"]
            call.endedAt = try c["endedAt"]
            call.endCause = try c["endCause"]
            call.serverStats = try c["serverStats"]
            call.nodeId = try c["nodeId"]
            call.headers = try c["headers"]
            return call
        }
    }

    static func node(_ row: PostgresRow) throws(StorageError) -> NodeRecord {
        try record(row) { c in
            NodeRecord(nodeId: try c["nodeId"], advertiseUrl: try c["advertiseUrl"],
                       mediaAddresses: try c["mediaAddresses"], state: try c["state"], startedAt: try c["startedAt"],
                       heartbeatAt: try c["heartbeatAt"], participants: try c["participants"], rooms: try c["rooms"],
                       cpuPercent: try c["cpuPercent"], instanceId: try c["instanceId"], processRef: try c["processRef"])
        }
    }

    static func lease(_ row: PostgresRow) throws(StorageError) -> RoomLease {
        try record(row) { c in
            RoomLease(applicationId: try c["applicationId"], roomId: try c["roomId"], nodeId: try c["nodeId"],
                      expiresAt: try c["expiresAt"])
        }
    }

    static func statistics(_ row: PostgresRow) throws(StorageError) -> CallStatisticsRecord {
        try record(row) { c in
            var record = CallStatisticsRecord(
                statisticsId: try c["statisticsId"], callId: try c["callId"], uploadedBy: try c["uploadedBy"],
                idempotencyKey: try c["idempotencyKey"], bodySHA256: try c["bodySHA256"], body: try c["body"],
                receivedAt: try c["receivedAt"])
            record.id = try c["id"]
            return record
        }
    }
}

/// A row's cells by column name, each decoded to the type its use asks for.
struct Cells {
    let row: PostgresRandomAccessRow

    subscript<T: PostgresDecodable>(_ column: String) -> T {
        get throws { try row[column].decode(T.self) }
    }
}
