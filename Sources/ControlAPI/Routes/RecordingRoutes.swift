import Auth
import ChorusCore
import Foundation
import Hummingbird
import Rooms
import Storage

/// `POST …/recordings`: what to record besides the full mix (an empty body records the mix only).
struct RecordingRequestBody: Decodable {
    /// Also each participant's own audio, one Ogg Opus file per call.
    var perParticipant: Bool?
}

/// A recording as the API shows it.
struct RecordingResponse: Encodable {
    var recordingId: String
    var roomId: String
    var state: String
    var startedAt: Date
    var stoppedAt: Date?
    var durationSeconds: Double?
    var bytes: Int64?
    var error: String?
    var fileUrl: String
    var perParticipant: Bool
    /// The participants' tracks (once the recording has ended).
    var tracks: [Track]?

    /// One participant's track: whose, where it starts against the mix, how long, where.
    struct Track: Encodable {
        var callId: String
        var userId: String
        var offsetSeconds: Double
        var durationSeconds: Double
        var bytes: Int64
        var fileUrl: String
    }

    init(_ record: RecordingRecord) {
        recordingId = record.recordingId
        roomId = record.roomId
        state = record.state
        startedAt = record.startedAt
        stoppedAt = record.stoppedAt
        durationSeconds = record.durationMilliseconds.map { Double($0) / 1_000 }
        bytes = record.bytes
        error = record.error
        fileUrl = "/v1/rooms/\(record.roomId)/recordings/\(record.recordingId)/file"
        perParticipant = record.perParticipant ?? false
        tracks = record.trackRecords.map { tracks in
            tracks.map { track in
                Track(callId: track.callId, userId: track.userId, offsetSeconds: Double(track.offsetMilliseconds) / 1_000,
                      durationSeconds: Double(track.durationMilliseconds) / 1_000, bytes: track.bytes,
                      fileUrl: "/v1/rooms/\(record.roomId)/recordings/\(record.recordingId)/tracks/\(track.callId)/file")
            }
        }
    }
}

extension RecordingRecord {
    /// The stored tracks, decoded (nil when none were stored).
    var trackRecords: [RecordingTrackRecord]? {
        tracks.flatMap { try? JSONDecoder().decode([RecordingTrackRecord].self, from: Data($0.utf8)) }
    }
}

extension ControlAPI {
    static let recordingNotFound = APIError(.notFound, "recordingNotFound", "no recording with this recordingId in this room")

    /// `/v1/rooms/{roomId}/recordings`: the room's full mix as Ogg Opus (application credentials).
    func addRecordingRoutes(_ group: RouterGroup<ChorusRequestContext>, _ routes: inout RouteTable) {
        group.route(&routes, .post, "/v1/rooms/{roomId}/recordings") { request, context in
            var request = request
            let app = try context.requireApplication()
            let roomId = try context.parameter("roomId", RoomID.init(validating:))
            let body = try await JSONBody.decode(RecordingRequestBody.self, &request, optional: true)
            let room = try await self.existingRoom(app, roomId, placing: true)
            return try await self.startRecording(app, roomId, room, perParticipant: body?.perParticipant ?? false)
        }
        group.route(&routes, .get, "/v1/rooms/{roomId}/recordings") { _, context in
            let app = try context.requireApplication()
            let roomId = try context.parameter("roomId", RoomID.init(validating:))
            let list = try await self.database.recordings(applicationId: app.id ?? -1, roomId: roomId.rawValue)
            return JSONBody.response(["recordings": list.map(RecordingResponse.init)])
        }
        group.route(&routes, .delete, "/v1/rooms/{roomId}/recordings/{recordingId}") { _, context in
            let (app, record) = try await self.ownRecording(context)
            guard record.state == "recording" else { return JSONBody.response(RecordingResponse(record)) }
            let room = try await self.existingRoom(app, try RoomID(validating: record.roomId))
            let ended = try await self.stopRecording(room, record)
            return JSONBody.response(RecordingResponse(ended))
        }
        group.route(&routes, .get, "/v1/rooms/{roomId}/recordings/{recordingId}/file") { _, context in
            let (_, record) = try await self.ownRecording(context)
            return try Self.oggFile(at: record.path)
        }
        group.route(&routes, .get, "/v1/rooms/{roomId}/recordings/{recordingId}/tracks/{callId}/file") { _, context in
            let (_, record) = try await self.ownRecording(context)
            let callId = context.parameters.get("callId") ?? ""
            guard let track = record.trackRecords?.first(where: { $0.callId == callId }) else {
                throw APIError(.notFound, "trackNotFound", "this recording has no track for this callId (yet)")
            }
            return try Self.oggFile(at: track.path)
        }
    }

    private static func oggFile(at path: String) throws -> Response {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw APIError(.notFound, "recordingFileMissing", "the recording's file is not on this node")
        }
        return Response(status: .ok, headers: [.contentType: "audio/ogg"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    private func startRecording(_ app: ApplicationRecord, _ roomId: RoomID, _ room: Room, perParticipant: Bool)
        async throws -> Response
    {
        if let active = await room.activeRecordingId {
            throw APIError(.conflict, "recordingInProgress", "the room is being recorded already (\(active))")
        }
        let id = "rec_" + SecureRandom.hex(12)
        let path = URL(fileURLWithPath: configuration.recordingsDirectory)
            .appendingPathComponent("\(app.id ?? 0)/\(roomId.rawValue)/\(id).opus").path
        var new = RecordingRecord(recordingId: id, applicationId: app.id ?? -1, roomId: roomId.rawValue, path: path,
                                  nodeId: cluster.identity.nodeId, startedAt: now())
        new.perParticipant = perParticipant
        let record = try await database.insertRecording(new)
        do {
            try await room.startRecording(id: id, path: path, perParticipant: perParticipant)
        } catch {
            _ = try? await database.endRecording(recordingId: id, RecordingEnd(
                state: "failed", at: now(), durationMilliseconds: 0, bytes: 0, error: "\(error)"))
            if case RecordingError.alreadyRecording(let active) = error {
                throw APIError(.conflict, "recordingInProgress", "the room is being recorded already (\(active))")
            }
            throw APIError(.serviceUnavailable, "recordingUnavailable", "the recording could not start: \(error)")
        }
        return JSONBody.response(RecordingResponse(record), status: .created,
                                 headers: [.location: "/v1/rooms/\(roomId.rawValue)/recordings/\(id)"])
    }

    /// Stops `record`'s recording in `room` and stores how it ended.
    func stopRecording(_ room: Room, _ record: RecordingRecord) async throws -> RecordingRecord {
        var ended = record
        if let stopped = await room.stopRecording(), stopped.summary.id == record.recordingId {
            ended.state = stopped.failure == nil ? "ready" : "failed"
            ended.durationMilliseconds = Int64((stopped.summary.durationSeconds * 1_000).rounded())
            ended.bytes = Int64(stopped.bytes)
            ended.error = stopped.failure
            if record.perParticipant == true { ended.tracks = Self.tracksJSON(stopped) }
        } else {
            ended.state = "interrupted"
        }
        ended.stoppedAt = now()
        _ = try await database.endRecording(recordingId: record.recordingId, RecordingEnd(
            state: ended.state, at: ended.stoppedAt ?? now(), durationMilliseconds: ended.durationMilliseconds,
            bytes: ended.bytes, error: ended.error, tracks: ended.tracks))
        return ended
    }

    /// The stopped recording's tracks as stored (`RecordingTrackRecord`), in the order they began.
    private static func tracksJSON(_ stopped: StoppedRecording) -> String? {
        let tracks = stopped.summary.tracks.sorted { $0.offsetSeconds < $1.offsetSeconds }.map { track in
            RecordingTrackRecord(
                callId: track.callId.rawValue, userId: track.userId.rawValue,
                offsetMilliseconds: Int64((track.offsetSeconds * 1_000).rounded()),
                durationMilliseconds: Int64((track.durationSeconds * 1_000).rounded()),
                bytes: Int64(stopped.trackBytes[track.callId] ?? 0),
                path: "\(stopped.tracksDirectory)/\(track.callId.rawValue).opus")
        }
        return (try? JSONEncoder().encode(tracks)).map { String(decoding: $0, as: UTF8.self) }
    }

    private func ownRecording(_ context: ChorusRequestContext) async throws -> (ApplicationRecord, RecordingRecord) {
        let app = try context.requireApplication()
        let roomId = try context.parameter("roomId", RoomID.init(validating:))
        let id = context.parameters.get("recordingId") ?? ""
        guard id.utf8.count <= 64, let record = try await database.recording(recordingId: id),
              record.applicationId == app.id, record.roomId == roomId.rawValue
        else { throw Self.recordingNotFound }
        return (app, record)
    }
}
