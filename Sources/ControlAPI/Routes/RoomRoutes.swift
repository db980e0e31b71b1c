import Auth
import ChorusCore
import Foundation
import Hummingbird
import HummingbirdCore
import Rooms
import Storage

/// Body of `POST /v1/rooms` and `PATCH /v1/rooms/{roomId}`: every field optional.
struct RoomSettingsRequest: Decodable {
    var roomId: String?
    var maxParticipants: Int?
    var mixedSpeakers: Int?
    var videoSlots: Int?

    /// Applies the given fields over `base` and checks the ranges (422 naming the field).
    func settings(over base: RoomSettings) throws(APIError) -> RoomSettings {
        var settings = base
        if let maxParticipants { settings.maxParticipants = maxParticipants }
        if let mixedSpeakers { settings.mixedSpeakers = mixedSpeakers }
        if let videoSlots { settings.videoSlots = videoSlots }
        do {
            try settings.validate()
        } catch {
            throw APIError(.unprocessableContent, "invalidRoomSettings", error.message)
        }
        return settings
    }
}

/// A room as the API shows it.
struct RoomResponse: Encodable {
    var roomId: String
    var maxParticipants: Int
    var mixedSpeakers: Int
    var videoSlots: Int
    var createdAt: Date

    init(_ record: RoomRecord) {
        roomId = record.roomId
        maxParticipants = record.maxParticipants
        mixedSpeakers = record.mixedSpeakers
        videoSlots = record.videoSlots
        createdAt = record.createdAt
    }
}

struct RoomListResponse: Encodable {
    var rooms: [RoomResponse]
    var nextPageToken: String?
}

extension ControlAPI {
    /// Room management, application credentials only; rooms are scoped to the calling application.
    func addRoomRoutes(_ group: RouterGroup<ChorusRequestContext>, _ routes: inout RouteTable) {
        group.route(&routes, .post, "/v1/rooms") { request, context in
            var request = request
            let app = try context.requireApplication()
            let body = try await JSONBody.decode(RoomSettingsRequest.self, &request, optional: true)
            return try await self.createRoom(app, body ?? RoomSettingsRequest())
        }
        group.route(&routes, .get, "/v1/rooms") { request, context in
            let app = try context.requireApplication()
            let paging = try Paging(request.uri)
            let page = try await self.database.openRooms(
                applicationId: app.id ?? -1, after: paging.token, limit: paging.size)
            return JSONBody.response(RoomListResponse(rooms: page.items.map(RoomResponse.init),
                                                      nextPageToken: page.nextPageToken?.text))
        }
        group.route(&routes, .get, "/v1/rooms/{roomId}") { _, context in
            let (_, record) = try await self.openRoom(context)
            return JSONBody.response(RoomResponse(record))
        }
        group.route(&routes, .patch, "/v1/rooms/{roomId}") { request, context in
            var request = request
            let (app, record) = try await self.openRoom(context)
            guard let body = try await JSONBody.decode(RoomSettingsRequest.self, &request) else {
                throw APIError.badRequest("missingBody", "this request needs a JSON body")
            }
            return try await self.updateRoom(app, record, body)
        }
        group.route(&routes, .delete, "/v1/rooms/{roomId}") { _, context in
            let (app, record) = try await self.openRoom(context)
            // A recording running here ends with the room: its file finished, its state stored.
            if let key = app.applicationKey, let id = try? RoomID(validating: record.roomId),
               let room = await self.registry.room(for: RoomKey(application: key, room: id)),
               let active = await room.activeRecordingId, let recording = try await self.database.recording(recordingId: active) {
                _ = try await self.stopRecording(room, recording)
            }
            _ = try await self.database.closeRoom(applicationId: record.applicationId, roomId: record.roomId,
                                                  at: self.now())
            if let key = app.applicationKey, let id = try? RoomID(validating: record.roomId) {
                await self.registry.close(RoomKey(application: key, room: id))
            }
            // Another node running the room ends it at its next heartbeat (its lease goes).
            await self.cluster.release(applicationId: record.applicationId, roomId: record.roomId)
            return Response(status: .noContent)
        }
    }

    private func createRoom(_ app: ApplicationRecord, _ body: RoomSettingsRequest) async throws -> Response {
        // A draining node still creates rooms when another node can run them.
        if isDraining, try await !otherNodeCanPlace() { throw APIError.draining }
        let roomId = try validated(body.roomId ?? Base64.urlEncode(SecureRandom.bytes(16)), RoomID.init(validating:))
        let settings = try body.settings(over: .defaults)
        let record: RoomRecord
        do {
            record = try await database.insertRoom(RoomRecord(
                applicationId: app.id ?? -1, roomId: roomId.rawValue, maxParticipants: settings.maxParticipants,
                mixedSpeakers: settings.mixedSpeakers, videoSlots: settings.videoSlots, createdAt: now()))
        } catch {
            guard case .conflict = error else { throw error }
            throw APIError(.conflict, "roomExists", "an open room with this roomId exists")
        }
        if let key = app.applicationKey, await cluster.ensureFresh() {
            // Placed now, on the least-loaded node; a node that cannot place it leaves that to
            // the first join.
            _ = try? await place(record, RoomKey(application: key, room: roomId), placing: true)
        }
        return JSONBody.response(RoomResponse(record), status: .created,
                                 headers: [.location: "/v1/rooms/\(roomId.rawValue)"])
    }

    private func updateRoom(_ app: ApplicationRecord, _ record: RoomRecord, _ body: RoomSettingsRequest)
        async throws -> Response
    {
        if let requested = body.roomId, requested != record.roomId {
            throw APIError(.unprocessableContent, "roomIdImmutable", "roomId cannot be changed")
        }
        // The live room's settings change on the node that runs it.
        try await redirectIfElsewhere(record)
        let settings = try body.settings(over: record.settings)
        var updated = record
        updated.maxParticipants = settings.maxParticipants
        updated.mixedSpeakers = settings.mixedSpeakers
        updated.videoSlots = settings.videoSlots
        guard let saved = try await database.updateRoomSettings(updated) else { throw APIError.roomNotFound }
        updated = saved
        if let key = app.applicationKey, let id = try? RoomID(validating: record.roomId) {
            // A room closed concurrently simply keeps its old settings.
            _ = try? await registry.room(for: RoomKey(application: key, room: id))?.update(settings: settings)
        }
        return JSONBody.response(RoomResponse(updated))
    }

    /// The calling application and the open room named by the path, or 400/401/403/404.
    private func openRoom(_ context: ChorusRequestContext) async throws -> (ApplicationRecord, RoomRecord) {
        let app = try context.requireApplication()
        let roomId = try context.parameter("roomId", RoomID.init(validating:))
        guard let record = try await database.openRoom(applicationId: app.id ?? -1, roomId: roomId.rawValue) else {
            throw APIError.roomNotFound
        }
        return (app, record)
    }
}

/// `pageToken` and `pageSize` query parameters.
struct Paging {
    static let defaultSize = 50
    static let maxSize = 200
    var token: PageToken?
    var size: Int

    init(_ uri: URI) throws {
        let query = uri.queryParameters
        size = Self.defaultSize
        if let text = query["pageSize"] {
            guard let value = Int(String(text)), (1...Self.maxSize).contains(value) else {
                throw APIError.badRequest("invalidPageSize", "pageSize must be an integer from 1 to \(Self.maxSize)")
            }
            size = value
        }
        if let text = query["pageToken"], !text.isEmpty {
            token = try PageToken(parsing: String(text))
        }
    }
}
