import Foundation
import GRDB

/// One recording of a room's full mix: where its Ogg Opus file is, its state ("recording",
/// "ready", "interrupted": the server stopped or died while it ran, the file plays up to its
/// last second; "failed": the file could not be written), and how long it is; with
/// `perParticipant`, also each participant's own track (`tracks`, a JSON array of
/// `RecordingTrackRecord` written when the recording ends). A trigger writes `recording.ready`
/// (or `recording.failed`) to the webhook outbox when it ends.
public struct RecordingRecord: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "recording"
    public var id: Int64?
    public var recordingId: String
    public var applicationId: Int64
    public var roomId: String
    public var state: String
    public var path: String
    public var nodeId: String
    public var startedAt: Date
    public var stoppedAt: Date?
    public var durationMilliseconds: Int64?
    public var bytes: Int64?
    public var error: String?
    /// Whether each participant's own audio is recorded too (nil: rows from before v6).
    public var perParticipant: Bool?
    /// The participants' tracks, a JSON array of `RecordingTrackRecord` (nil until it ends).
    public var tracks: String?

    public init(recordingId: String, applicationId: Int64, roomId: String, path: String, nodeId: String, startedAt: Date) {
        self.recordingId = recordingId
        self.applicationId = applicationId
        self.roomId = roomId
        self.state = "recording"
        self.path = path
        self.nodeId = nodeId
        self.startedAt = startedAt
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }
}

/// One participant's track of a recording, as stored in `RecordingRecord.tracks`.
public struct RecordingTrackRecord: Codable, Sendable, Equatable {
    public var callId: String
    public var userId: String
    /// Where the track starts against the full mix (the recording's start), milliseconds.
    public var offsetMilliseconds: Int64
    public var durationMilliseconds: Int64
    public var bytes: Int64
    public var path: String

    public init(callId: String, userId: String, offsetMilliseconds: Int64, durationMilliseconds: Int64, bytes: Int64,
                path: String) {
        self.callId = callId
        self.userId = userId
        self.offsetMilliseconds = offsetMilliseconds
        self.durationMilliseconds = durationMilliseconds
        self.bytes = bytes
        self.path = path
    }
}

/// How a recording ended.
public struct RecordingEnd: Sendable, Equatable {
    public var state: String
    public var at: Date
    public var durationMilliseconds: Int64?
    public var bytes: Int64?
    public var error: String?
    /// The participants' tracks as JSON (`RecordingTrackRecord`s), when recorded.
    public var tracks: String?

    public init(state: String, at: Date, durationMilliseconds: Int64?, bytes: Int64?, error: String?,
                tracks: String? = nil) {
        self.state = state
        self.at = at
        self.durationMilliseconds = durationMilliseconds
        self.bytes = bytes
        self.error = error
        self.tracks = tracks
    }
}

/// Recordings, behind the same promises as `ChorusStore`.
public protocol RecordingStore: Sendable {
    func insertRecording(_ record: RecordingRecord) async throws(StorageError) -> RecordingRecord
    func recording(recordingId: String) async throws(StorageError) -> RecordingRecord?
    func recordings(applicationId: Int64, roomId: String) async throws(StorageError) -> [RecordingRecord]
    /// Ends a recording still running; false when it had ended already.
    func endRecording(recordingId: String, _ end: RecordingEnd) async throws(StorageError) -> Bool
    /// At a node's start: its recordings still "recording" are "interrupted" (it stopped or died).
    func interruptRecordings(nodeId: String, at: Date) async throws(StorageError) -> Int
}

extension Schema {
    static let v5 = SchemaMigration(name: "v5-recordings", steps: [
        .table(TableSpec(name: "recording", columns: [
            ColumnSpec("id", .rowID),
            ColumnSpec("recordingId", .text, unique: true),
            ColumnSpec("applicationId", .integer, references: .cascade("application", "id")),
            ColumnSpec("roomId", .text),
            ColumnSpec("state", .text),
            ColumnSpec("path", .text),
            ColumnSpec("nodeId", .text),
            ColumnSpec("startedAt", .datetime),
            ColumnSpec("stoppedAt", .datetime, nullable: true),
            ColumnSpec("durationMilliseconds", .integer, nullable: true),
            ColumnSpec("bytes", .integer, nullable: true),
            ColumnSpec("error", .text, nullable: true),
        ])),
        .index(IndexSpec(name: "recording_by_room", table: "recording", columns: ["applicationId", "roomId"])),
        trigger("recording_ready", after: "UPDATE", on: "recording",
                when: "OLD.\"state\" = 'recording' AND NEW.\"state\" IN ('ready', 'interrupted')",
                events: [("recording.ready", "NEW.\"roomId\"", "NEW.\"recordingId\"")]),
        trigger("recording_failed", after: "UPDATE", on: "recording",
                when: "OLD.\"state\" = 'recording' AND NEW.\"state\" = 'failed'",
                events: [("recording.failed", "NEW.\"roomId\"", "NEW.\"recordingId\"")]),
    ])

    static let v6 = SchemaMigration(name: "v6-recording-tracks", steps: [
        .addColumn(table: "recording", ColumnSpec("perParticipant", .boolean, nullable: true)),
        .addColumn(table: "recording", ColumnSpec("tracks", .text, nullable: true)),
    ])
}

extension SQLiteStore {
    public func insertRecording(_ record: RecordingRecord) async throws(StorageError) -> RecordingRecord {
        try await insert(record)
    }

    public func recording(recordingId: String) async throws(StorageError) -> RecordingRecord? {
        try await read { db in try RecordingRecord.filter(Column("recordingId") == recordingId).fetchOne(db) }
    }

    public func recordings(applicationId: Int64, roomId: String) async throws(StorageError) -> [RecordingRecord] {
        try await read { db in
            try RecordingRecord.filter(Column("applicationId") == applicationId && Column("roomId") == roomId)
                .order(Column("id")).fetchAll(db)
        }
    }

    public func endRecording(recordingId: String, _ end: RecordingEnd) async throws(StorageError) -> Bool {
        try await write { db in
            try db.execute(sql: """
                UPDATE "recording" SET "state" = ?, "stoppedAt" = ?, "durationMilliseconds" = ?, "bytes" = ?, "error" = ?,
                  "tracks" = ?
                WHERE "recordingId" = ? AND "state" = 'recording'
                """, arguments: [end.state, end.at, end.durationMilliseconds, end.bytes, end.error, end.tracks, recordingId])
            return db.changesCount > 0
        }
    }

    public func interruptRecordings(nodeId: String, at: Date) async throws(StorageError) -> Int {
        try await write { db in
            try db.execute(sql: """
                UPDATE "recording" SET "state" = 'interrupted', "stoppedAt" = ? WHERE "nodeId" = ? AND "state" = 'recording'
                """, arguments: [at, nodeId])
            return db.changesCount
        }
    }
}
