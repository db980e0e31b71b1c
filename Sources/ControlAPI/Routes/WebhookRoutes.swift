import Auth
import Foundation
import Hummingbird
import Storage
import Webhooks

/// An endpoint as the API shows it; `secret` only when it was just made (create, rotate).
struct WebhookEndpointResponse: Encodable {
    var endpointId: String
    var url: String
    var events: [String]
    var enabled: Bool
    var disabledReason: String?
    var createdAt: Date
    var secret: String?

    init(_ record: WebhookEndpointRecord, showingSecret: Bool = false) {
        endpointId = record.endpointId
        url = record.url
        events = record.eventTypes
        enabled = record.enabled
        disabledReason = record.disabledReason
        createdAt = record.createdAt
        secret = showingSecret ? record.secret : nil
    }
}

struct WebhookEndpointRequest: Decodable {
    var url: String?
    var events: [String]?
    var enabled: Bool?
}

struct WebhookDeliveryResponse: Encodable {
    var eventId: String
    var type: String
    var roomId: String?
    var state: String
    var attempts: Int
    var nextAttemptAt: Date?
    var lastAttemptAt: Date?
    var lastStatus: Int?
    var lastError: String?
    var createdAt: Date

    init(_ view: WebhookDeliveryView) {
        eventId = view.eventId
        type = view.type
        roomId = view.roomId
        state = view.state
        attempts = view.attempts
        nextAttemptAt = view.state == "pending" ? view.nextAttemptAt : nil
        lastAttemptAt = view.lastAttemptAt
        lastStatus = view.lastStatus
        lastError = view.lastError
        createdAt = view.createdAt
    }
}

extension ControlAPI {
    static let webhookNotFound = APIError(.notFound, "webhookNotFound", "no webhook endpoint with this endpointId")
    /// Endpoints one application may have.
    static let maxWebhookEndpoints = 20

    /// `/v1/webhooks`: an application's endpoints and their deliveries (application credentials only).
    func addWebhookRoutes(_ group: RouterGroup<ChorusRequestContext>, _ routes: inout RouteTable) {
        group.route(&routes, .post, "/v1/webhooks") { request, context in
            var request = request
            let app = try context.requireApplication()
            let body = try await JSONBody.decode(WebhookEndpointRequest.self, &request)
            return try await self.createWebhook(app, body)
        }
        group.route(&routes, .get, "/v1/webhooks") { _, context in
            let app = try context.requireApplication()
            let endpoints = try await self.database.webhookEndpoints(applicationId: app.id ?? -1)
            return JSONBody.response(["webhooks": endpoints.map { WebhookEndpointResponse($0) }])
        }
        group.route(&routes, .get, "/v1/webhooks/{endpointId}") { _, context in
            JSONBody.response(WebhookEndpointResponse(try await self.ownWebhook(context)))
        }
        group.route(&routes, .patch, "/v1/webhooks/{endpointId}") { request, context in
            var request = request
            var endpoint = try await self.ownWebhook(context)
            guard let body = try await JSONBody.decode(WebhookEndpointRequest.self, &request) else {
                throw APIError.badRequest("missingBody", "this request needs a JSON body")
            }
            if let url = body.url { endpoint.url = try await self.checkedWebhookURL(url) }
            if let events = body.events { endpoint.events = try Self.checkedEventTypes(events).joined(separator: " ") }
            if let enabled = body.enabled {
                endpoint.enabled = enabled
                if enabled { endpoint.disabledReason = nil }
            }
            try await self.database.updateWebhookEndpoint(endpoint)
            return JSONBody.response(WebhookEndpointResponse(endpoint))
        }
        group.route(&routes, .delete, "/v1/webhooks/{endpointId}") { _, context in
            let endpoint = try await self.ownWebhook(context)
            _ = try await self.database.deleteWebhookEndpoint(endpointId: endpoint.endpointId)
            return Response(status: .noContent)
        }
        group.route(&routes, .post, "/v1/webhooks/{endpointId}/secret") { _, context in
            var endpoint = try await self.ownWebhook(context)
            endpoint.secret = WebhookSignature.newSecret()
            try await self.database.updateWebhookEndpoint(endpoint)
            return JSONBody.response(WebhookEndpointResponse(endpoint, showingSecret: true))
        }
        group.route(&routes, .get, "/v1/webhooks/{endpointId}/deliveries") { request, context in
            let endpoint = try await self.ownWebhook(context)
            let paging = try Paging(request.uri)
            let page = try await self.database.webhookDeliveries(endpointRowId: endpoint.id ?? -1, after: paging.token,
                                                                 limit: paging.size)
            return JSONBody.response(WebhookDeliveryList(deliveries: page.items.map(WebhookDeliveryResponse.init),
                                                         nextPageToken: page.nextPageToken?.text))
        }
    }

    struct WebhookDeliveryList: Encodable {
        var deliveries: [WebhookDeliveryResponse]
        var nextPageToken: String?
    }

    private func createWebhook(_ app: ApplicationRecord, _ body: WebhookEndpointRequest?) async throws -> Response {
        guard let body, let url = body.url else { throw APIError.badRequest("missingUrl", "a webhook needs a url") }
        let checked = try await checkedWebhookURL(url)
        let events = try Self.checkedEventTypes(body.events ?? [])
        guard try await database.webhookEndpoints(applicationId: app.id ?? -1).count < Self.maxWebhookEndpoints else {
            throw APIError(.conflict, "tooManyWebhooks", "an application has at most \(Self.maxWebhookEndpoints) endpoints")
        }
        var record = WebhookEndpointRecord(endpointId: "wh_" + SecureRandom.hex(12), applicationId: app.id ?? -1,
                                           url: checked, secret: WebhookSignature.newSecret(), events: events,
                                           createdAt: now())
        if body.enabled == false { record.enabled = false }
        record = try await database.insertWebhookEndpoint(record)
        return JSONBody.response(WebhookEndpointResponse(record, showingSecret: true), status: .created,
                                 headers: [.location: "/v1/webhooks/\(record.endpointId)"])
    }

    /// The calling application's endpoint named in the path (another's is 404 too).
    private func ownWebhook(_ context: ChorusRequestContext) async throws -> WebhookEndpointRecord {
        let app = try context.requireApplication()
        let id = context.parameters.get("endpointId") ?? ""
        guard id.utf8.count <= 64, let endpoint = try await database.webhookEndpoint(endpointId: id),
              endpoint.applicationId == app.id
        else { throw Self.webhookNotFound }
        return endpoint
    }

    /// An http(s) URL of at most 2,048 characters whose host resolves to allowed addresses only.
    func checkedWebhookURL(_ text: String) async throws -> String {
        guard let url = WebhookURL(text) else {
            throw APIError.badRequest("invalidWebhookUrl",
                                      "url must be an http or https URL with a host, at most \(WebhookURL.maxLength) characters")
        }
        if case .failure(let refusal) = await outboundPolicy.resolve(url.host, port: url.port) {
            throw APIError.badRequest("webhookUrlNotAllowed", refusal.description)
        }
        return url.text
    }

    static func checkedEventTypes(_ events: [String]) throws -> [String] {
        if let unknown = events.first(where: { !WebhookBodies.types.contains($0) }) {
            throw APIError.badRequest("unknownEventType", "unknown event type \"\(unknown.prefix(64))\"; known: "
                                      + WebhookBodies.types.sorted().joined(separator: ", "))
        }
        var seen = Set<String>()
        return events.filter { seen.insert($0).inserted }
    }
}
