import Auth
import ChorusCore
import Foundation
import HTTPTypes
import Hummingbird
import Rooms
import SDP
import Storage

extension ControlAPI {
    /// Largest SDP offer accepted: the parser's own bound. A Chrome receive-only video section is
    /// about 5 KB, so a listener asking for a room's 25 slots sends ~130 KB.
    static let maxOfferBytes = SessionDescription.defaultMaximumBytes
    /// A JSON join carries the offer escaped (each CRLF becomes 4 characters, so lines of 40
    /// characters or more grow by at most 5 %) plus a few short fields.
    static let maxJoinBodyBytes = maxOfferBytes + maxOfferBytes / 8 + 4096

    /// Joins a room with an SDP offer: JSON (`{"sdp", "userId"?, "displayName"?, "headers"?}`, answer in
    /// JSON) or WHIP (`Content-Type: application/sdp`, answer as `application/sdp`). The call row
    /// is written before the room sees the join, so every later state change finds it.
    func join(_ request: inout Request, _ context: ChorusRequestContext) async throws -> Response {
        let principal = try context.requirePrincipal()
        let roomId = try context.parameter("roomId", RoomID.init(validating:))
        let whip = Self.isSDP(request.headers[.contentType])
        let input = try await joinInput(&request, whip: whip)
        let userId = try Self.joiningUser(principal, requested: input.userId, whip: whip)
        let (room, created) = try await placedRoomForJoin(principal.application, roomId)
        let callId = ApplicationCredentials.newCallID()
        var call = CallRecord(
            callId: callId.rawValue, applicationId: principal.application.id ?? -1, roomId: roomId.rawValue,
            userId: userId.rawValue, displayName: input.displayName, joinedAt: now())
        call.nodeId = cluster.identity.nodeId
        call.headers = CallHeaders.stored(input.headers)
        _ = try await database.insertCall(call)
        let answer: JoinAnswer
        do {
            answer = try await room.join(JoinRequest(callId: callId, userId: userId, displayName: input.displayName,
                                                     offer: input.offer, headers: input.headers))
        } catch {
            try? await database.deleteCall(callId: callId.rawValue)
            // A refused join leaves nothing behind: not a call, not a room it created.
            if created, await room.activeCount == 0 {
                _ = try? await database.closeRoom(applicationId: principal.application.id ?? -1,
                                                  roomId: roomId.rawValue, at: now())
                await registry.close(room.key)
                await cluster.release(applicationId: principal.application.id ?? -1, roomId: roomId.rawValue)
            }
            throw Self.apiError(error)
        }
        let location = "/v1/rooms/\(roomId.rawValue)/participants/\(callId.rawValue)"
        if whip {
            return Response(status: .created, headers: [.contentType: "application/sdp", .location: location],
                            body: .init(byteBuffer: ByteBuffer(string: answer.sdp)))
        }
        let body = JoinResponse(callId: callId.rawValue, roomId: roomId.rawValue, userId: userId.rawValue,
                                sdp: answer.sdp, eventsUrl: "/v1/rooms/\(roomId.rawValue)/events")
        return JSONBody.response(body, status: .created, headers: [.location: location])
    }

    struct JoinInput {
        var offer: String
        var userId: String?
        var displayName: String?
        var headers: [String: String] = [:]
    }

    private func joinInput(_ request: inout Request, whip: Bool) async throws -> JoinInput {
        if whip {
            let bytes = try await JSONBody.bytes(&request, limit: Self.maxOfferBytes)
            guard let offer = String(validating: bytes.readableBytesView, as: UTF8.self), !offer.isEmpty else {
                throw APIError.badRequest("invalidOffer", "the offer must be UTF-8 SDP text")
            }
            let query = request.uri.queryParameters
            return JoinInput(offer: offer, userId: query["userId"].map(String.init),
                             displayName: try Self.displayName(query["displayName"].map(String.init)))
        }
        guard let body = try await JSONBody.decode(JoinBody.self, &request, limit: Self.maxJoinBodyBytes) else {
            throw APIError.badRequest("missingBody", "this request needs a JSON body with an sdp offer")
        }
        guard body.sdp.utf8.count <= Self.maxOfferBytes else { throw APIError.payloadTooLarge(limit: Self.maxOfferBytes) }
        return JoinInput(offer: body.sdp, userId: body.userId, displayName: try Self.displayName(body.displayName),
                         headers: try CallHeaders.validated(body.headers))
    }

    /// A user joins as itself; an application names the user (WHIP may leave it to the server).
    static func joiningUser(_ principal: Principal, requested: String?, whip: Bool) throws -> UserID {
        switch principal {
        case .user(_, let user):
            if let requested, requested != user.rawValue { throw APIError.forbidden }
            return user
        case .application:
            if let requested { return try validated(requested, UserID.init(validating:)) }
            guard whip else { throw APIError.badRequest("missingUserId", "an application must name the userId") }
            return try validated("whip-" + Base64.urlEncode(SecureRandom.bytes(9)), UserID.init(validating:))
        }
    }

    static func displayName(_ value: String?) throws -> String? {
        guard let value else { return nil }
        guard value.count <= 255, !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw APIError.badRequest("invalidDisplayName", "displayName must be at most 255 printable characters") }
        return value
    }

    static func isSDP(_ contentType: String?) -> Bool {
        contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() == "application/sdp"
    }

    static func apiError(_ error: any Error) -> APIError {
        switch error as? JoinError {
        case .offerRejected(let code, let message)?: return APIError(.unprocessableContent, code, message)
        case .roomFull?: return APIError(.conflict, "roomFull", "the room has its maximum number of participants")
        case .roomClosed?: return APIError.roomNotFound
        case .duplicateCall?: return APIError(.conflict, "duplicateCall", "this call already joined")
        case .internalFailure(let detail)?:
            return APIError(.serviceUnavailable, "mediaUnavailable", "media could not be set up: \(detail)",
                            headers: [.retryAfter: "1"])
        case nil: return ErrorMiddleware.apiError(for: error)
        }
    }
}
