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
    /// The caller's custom headers (`CallHeaders`): checked by the route, not by the decoder,
    /// so that a wrong type gets its own message.
    var headers: JSONValue?
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
    /// The tallest picture wanted in some video slots, by mid (e.g. each tile's height).
    var slots: [SlotPatch]?

    /// One slot's cap: `maxHeight` in pixels, or null to lift it.
    struct SlotPatch: Decodable {
        var mid: String
        var maxHeight: Int?
    }

    static let maximumPinned = 25
    static let maximumHeight = 4_320

    /// The slot caps, validated against the participant's slots: 422 naming an unknown or
    /// repeated mid or a height outside 1…4320.
    func slotHeights(mids: [String]) throws(APIError) -> [SlotHeight]? {
        guard let slots else { return nil }
        var seen: Set<String> = []
        var heights: [SlotHeight] = []
        for slot in slots {
            guard mids.contains(slot.mid) else {
                throw APIError(.unprocessableContent, "unknownSlot", "this participant has no video slot with mid \(slot.mid.prefix(64))")
            }
            guard seen.insert(slot.mid).inserted else {
                throw APIError(.unprocessableContent, "duplicateSlot", "slot \(slot.mid) is named twice")
            }
            if let height = slot.maxHeight, !(1...Self.maximumHeight).contains(height) {
                throw APIError(.unprocessableContent, "invalidMaxHeight", "maxHeight must be 1…\(Self.maximumHeight) pixels, or null")
            }
            heights.append(SlotHeight(mid: slot.mid, maximumHeight: slot.maxHeight))
        }
        return heights
    }

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
    func liveRoom(_ context: ChorusRequestContext, userMayRead: Bool, placing: Bool = false) async throws
        -> (ApplicationRecord, Room)
    {
        let principal = try context.requirePrincipal()
        let roomId = try context.parameter("roomId", RoomID.init(validating:))
        // Only the application brings a room back to life; a user's stream needs the user in it.
        var isUser = false
        if case .user = principal { isUser = true }
        let room = try await existingRoom(principal.application, roomId, placing: placing && !isUser)
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
        let room = try await existingRoom(principal.application, roomId)
        guard let snapshot = await room.participant(callId) else { throw APIError.participantNotFound }
        if case .user(_, let user) = principal, snapshot.userId != user { throw APIError.forbidden }
        return (room, callId)
    }
}

extension APIError {
    static let participantNotFound = APIError(.notFound, "participantNotFound", "no such participant in this room")
}
