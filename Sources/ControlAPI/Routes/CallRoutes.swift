import Auth
import ChorusCore
import Foundation
import Hummingbird
import HummingbirdCore
import Storage

/// A call as the API shows it.
struct CallResponse: Encodable {
    var callId: String
    var roomId: String
    var userId: String
    var displayName: String?
    var state: String
    var joinedAt: Date
    var establishedAt: Date?
    var endedAt: Date?
    var endCause: String?
    var durationSeconds: Double?
    var serverStatistics: JSONValue?
    /// The caller's custom headers given at join.
    var headers: [String: String]?

    init(_ record: CallRecord) {
        callId = record.callId
        roomId = record.roomId
        userId = record.userId
        displayName = record.displayName
        state = record.state
        joinedAt = record.joinedAt
        establishedAt = record.establishedAt
        endedAt = record.endedAt
        endCause = record.endCause
        if let endedAt = record.endedAt {
            durationSeconds = endedAt.timeIntervalSince(record.establishedAt ?? record.joinedAt)
        }
        serverStatistics = record.serverStats.flatMap { try? JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
        headers = CallHeaders.decoded(record.headers)
    }
}

struct CallListResponse: Encodable {
    var calls: [CallResponse]
    var nextPageToken: String?
}

extension ControlAPI {
    /// Call records: the application sees all of its calls, a user only its own.
    func addCallRoutes(_ group: RouterGroup<ChorusRequestContext>, _ routes: inout RouteTable) {
        group.route(&routes, .get, "/v1/calls/{callId}") { _, context in
            JSONBody.response(CallResponse(try await self.accessibleCall(context)))
        }
        group.route(&routes, .get, "/v1/calls") { request, context in
            let principal = try context.requirePrincipal()
            let filter = try Self.callFilter(request.uri, principal: principal)
            let paging = try Paging(request.uri)
            let page = try await self.database.calls(filter, after: paging.token, limit: paging.size)
            return JSONBody.response(CallListResponse(calls: page.items.map(CallResponse.init),
                                                      nextPageToken: page.nextPageToken?.text))
        }
    }

    /// The call named by the path if the caller may see it: 404 for another application's call
    /// (its existence is not revealed), 403 for another user's call in the same application.
    func accessibleCall(_ context: ChorusRequestContext) async throws -> CallRecord {
        let principal = try context.requirePrincipal()
        let callId = try context.parameter("callId", CallID.init(validating:))
        guard let call = try await database.call(callId: callId.rawValue),
              call.applicationId == principal.application.id
        else { throw APIError.callNotFound }
        if case .user(_, let user) = principal, user.rawValue != call.userId { throw APIError.forbidden }
        return call
    }

    static func callFilter(_ uri: URI, principal: Principal) throws -> CallFilter {
        let query = uri.queryParameters
        var filter = CallFilter(applicationId: principal.application.id ?? -1)
        if let text = query["roomId"] {
            filter.roomId = try validated(String(text), RoomID.init(validating:)).rawValue
        }
        if let text = query["userId"] {
            filter.userId = try validated(String(text), UserID.init(validating:)).rawValue
        }
        if case .user(_, let user) = principal {
            // A user lists only its own calls.
            if let asked = filter.userId, asked != user.rawValue { throw APIError.forbidden }
            filter.userId = user.rawValue
        }
        filter.from = try query["from"].map { try timestamp(String($0), name: "from") }
        filter.to = try query["to"].map { try timestamp(String($0), name: "to") }
        return filter
    }

    private static func timestamp(_ text: String, name: String) throws -> Date {
        guard let date = ApplicationRequestSignature.parseTimestamp(text) else {
            throw APIError.badRequest("invalidTimestamp", "\(name) must be an ISO 8601 date-time")
        }
        return date
    }
}
