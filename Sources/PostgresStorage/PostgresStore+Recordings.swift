import Foundation
import PostgresNIO
import Storage

extension PostgresStore {
    public func insertRecording(_ record: RecordingRecord) async throws(StorageError) -> RecordingRecord {
        let row = try await first("""
            INSERT INTO "recording"("recordingId", "applicationId", "roomId", "state", "path", "nodeId", "startedAt",
                                    "perParticipant")
            VALUES (\(record.recordingId), \(record.applicationId), \(record.roomId), \(record.state), \(record.path),
                    \(record.nodeId), \(record.startedAt), \(record.perParticipant))
            RETURNING *
            """)
        guard let row else { throw .unavailable("the insert returned no row") }
        return try Self.recording(row)
    }

    public func recording(recordingId: String) async throws(StorageError) -> RecordingRecord? {
        try await first(#"SELECT * FROM "recording" WHERE "recordingId" = \#(recordingId)"#).map(Self.recording)
    }

    public func recordings(applicationId: Int64, roomId: String) async throws(StorageError) -> [RecordingRecord] {
        try await all("""
            SELECT * FROM "recording" WHERE "applicationId" = \(applicationId) AND "roomId" = \(roomId) ORDER BY "id"
            """).map(Self.recording)
    }

    public func endRecording(recordingId: String, _ end: RecordingEnd) async throws(StorageError) -> Bool {
        try await count("""
            UPDATE "recording" SET "state" = \(end.state), "stoppedAt" = \(end.at),
              "durationMilliseconds" = \(end.durationMilliseconds), "bytes" = \(end.bytes), "error" = \(end.error),
              "tracks" = \(end.tracks)
            WHERE "recordingId" = \(recordingId) AND "state" = 'recording' RETURNING 1
            """) > 0
    }

    public func interruptRecordings(nodeId: String, at: Date) async throws(StorageError) -> Int {
        try await count("""
            UPDATE "recording" SET "state" = 'interrupted', "stoppedAt" = \(at)
            WHERE "nodeId" = \(nodeId) AND "state" = 'recording' RETURNING 1
            """)
    }

    static func recording(_ row: PostgresRow) throws(StorageError) -> RecordingRecord {
        try Rows.record(row) { c in
            var record = RecordingRecord(recordingId: try c["recordingId"], applicationId: try c["applicationId"],
                                         roomId: try c["roomId"], path: try c["path"], nodeId: try c["nodeId"],
                                         startedAt: try c["startedAt"])
            record.id = try c["id"]
            record.state = try c["state"]
            record.stoppedAt = try c["stoppedAt"]
            record.durationMilliseconds = try c["durationMilliseconds"]
            record.bytes = try c["bytes"]
            record.error = try c["error"]
            record.perParticipant = try c["perParticipant"]
            record.tracks = try c["tracks"]
            return record
        }
    }
}
