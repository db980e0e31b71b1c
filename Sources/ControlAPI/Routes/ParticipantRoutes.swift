import Auth
import ChorusCore
import Foundation
import HTTPTypes
import Hummingbird
import Rooms
import Storage

/// `POST /v1/rooms/{roomId}/participants` JSON body.
struct JoinBody: Decodable {
    var sdp: String
    var userId: String?
    var displayName: String?
}

/// The join's answer in JSON form.
struct JoinResponse: Encodable {
    var callId: String
    var roomId: String
    var userId: String
    var sdp: String
    var eventsUrl: String
}

/// A participant as the API shows it.
struct ParticipantResponse: Encodable {
    var callId: String
    var userId: String
    var displayName: String?
    var state: String
    var joinedAt: Date
    var establishedAt: Date?
    var audioMuted: Bool
    var videoPaused: Bool
    var srtpProfile: String?
    var media: MediaCounters
    var audio: [String: Int]
    var video: [String: Int]
    var pinned: [String]
    var downlink: DownlinkEstimate?
    var slots: [SlotView]
    var publishedLayers: [PublishedLayerView]
    /// The answer to a re-offer sent with this PATCH (absent otherwise).
    var sdp: String?

    init(_ snapshot: ParticipantSnapshot) {
        callId = snapshot.callId.rawValue
        userId = snapshot.userId.rawValue
        displayName = snapshot.displayName
        state = snapshot.state.rawValue
        joinedAt = snapshot.joinedAt
        establishedAt = snapshot.establishedAt
        audioMuted = snapshot.audioMuted
        videoPaused = snapshot.videoPaused
        srtpProfile = snapshot.srtpProfile
        media = snapshot.counters
        audio = snapshot.audioStatistics
        video = snapshot.videoStatistics
        pinned = snapshot.pinned.map(\.rawValue)
        downlink = snapshot.downlink
        slots = snapshot.slots
        publishedLayers = snapshot.publishedLayers
    }
}

struct ParticipantPatch: Decodable {
    var audioMuted: Bool?
    var videoPaused: Bool?
    /// Publishers (call IDs) to show first in this participant's video slots, in order.
    var pinned: [String]?
    /// A re-offer (JSEP): new ICE credentials in it restart ICE.
    var sdp: String?

    static let maximumPinned = 25

    /// The pinned call IDs, validated: 400 naming a malformed ID, 422 for too many.
    func pinnedCalls() throws(APIError) -> [CallID]? {
        guard let pinned else { return nil }
        guard pinned.count <= Self.maximumPinned else {
            throw APIError(.unprocessableContent, "tooManyPinned", "at most \(Self.maximumPinned) pinned publishers")
        }
        var calls: [CallID] = []
        for raw in pinned { calls.append(try validated(raw, CallID.init(validating:))) }
        return calls
    }
}

extension ControlAPI {
    func addParticipantRoutes(_ group: RouterGroup<ChorusRequestContext>, _ routes: inout RouteTable) {
        group.route(&routes, .post, "/v1/rooms/{roomId}/participants") { request, context in
            var request = request
            return try await self.join(&request, context)
        }
        group.route(&routes, .get, "/v1/rooms/{roomId}/participants") { _, context in
            let (_, room) = try await self.liveRoom(context, userMayRead: true)
            let list = await room.participantList().map(ParticipantResponse.init)
            return JSONBody.response(["participants": list])
        }
        group.route(&routes, .get, "/v1/rooms/{roomId}/participants/{callId}") { _, context in
            let (_, room) = try await self.liveRoom(context, userMayRead: true)
            let callId = try context.parameter("callId", CallID.init(validating:))
            guard let snapshot = await room.participant(callId) else { throw APIError.participantNotFound }
            return JSONBody.response(ParticipantResponse(snapshot))
        }
        group.route(&routes, .patch, "/v1/rooms/{roomId}/participants/{callId}") { request, context in
            var request = request
            return try await self.patchParticipant(&request, context)
        }
        group.route(&routes, .delete, "/v1/rooms/{roomId}/participants/{callId}") { _, context in
            let (room, callId) = try await self.ownParticipant(context)
            let cause: EndCause = if case .user = try context.requirePrincipal() { .hungUp } else { .kicked }
            guard await room.end(callId, cause: cause) else { throw APIError.participantNotFound }
            return Response(status: .noContent)
        }
    }

    /// The open room named by the path, for the application or (when allowed) a user who is in it.
    func liveRoom(_ context: ChorusRequestContext, userMayRead: Bool) async throws -> (ApplicationRecord, Room) {
        let principal = try context.requirePrincipal()
        let roomId = try context.parameter("roomId", RoomID.init(validating:))
        guard let key = principal.application.applicationKey,
              let room = await registry.room(for: RoomKey(application: key, room: roomId))
        else { throw APIError.roomNotFound }
        if case .user(_, let user) = principal {
            guard userMayRead, await room.hasParticipant(userId: user) else { throw APIError.forbidden }
        }
        return (principal.application, room)
    }

    /// The participant named by the path, if the caller is the application or that participant.
    func ownParticipant(_ context: ChorusRequestContext) async throws -> (Room, CallID) {
        let principal = try context.requirePrincipal()
        let roomId = try context.parameter("roomId", RoomID.init(validating:))
        let callId = try context.parameter("callId", CallID.init(validating:))
        guard let key = principal.application.applicationKey,
              let room = await registry.room(for: RoomKey(application: key, room: roomId))
        else { throw APIError.roomNotFound }
        guard let snapshot = await room.participant(callId) else { throw APIError.participantNotFound }
        if case .user(_, let user) = principal, snapshot.userId != user { throw APIError.forbidden }
        return (room, callId)
    }
}

extension APIError {
    static let participantNotFound = APIError(.notFound, "participantNotFound", "no such participant in this room")
}
