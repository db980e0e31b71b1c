import Foundation
import GRDB

/// One webhook endpoint of an application: where its events are posted, the secret they are
/// signed with (Standard Webhooks: "whsec_" + base64 of the key), the event types it takes
/// (space-separated; empty for every type) and whether it is enabled (a 410 disables it).
public struct WebhookEndpointRecord: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "webhookEndpoint"
    public var id: Int64?
    public var endpointId: String
    public var applicationId: Int64
    public var url: String
    public var secret: String
    public var events: String
    public var enabled: Bool
    public var disabledReason: String?
    public var createdAt: Date

    public init(endpointId: String, applicationId: Int64, url: String, secret: String, events: [String], createdAt: Date) {
        self.endpointId = endpointId
        self.applicationId = applicationId
        self.url = url
        self.secret = secret
        self.events = events.joined(separator: " ")
        self.enabled = true
        self.createdAt = createdAt
    }

    /// The event types it takes; empty for every type.
    public var eventTypes: [String] { events.split(separator: " ").map(String.init) }

    public mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }
}

/// One event in the outbox: written by a trigger with the state change it reports (its
/// `subject` names the record), or by the server with its `body` (events that change no
/// stored state). `fannedOut` once it has one delivery per endpoint that takes it.
public struct WebhookEventRecord: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "webhookEvent"
    public var id: Int64?
    public var eventId: String
    public var applicationId: Int64
    public var roomId: String?
    public var type: String
    public var subject: String?
    public var body: String?
    public var createdAt: Date
    public var fannedOut: Bool

    public init(eventId: String, applicationId: Int64, roomId: String?, type: String, body: String, createdAt: Date) {
        self.eventId = eventId
        self.applicationId = applicationId
        self.roomId = roomId
        self.type = type
        self.body = body
        self.createdAt = createdAt
        self.fannedOut = false
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }
}

/// One event's delivery to one endpoint, as its endpoint's owner sees it.
public struct WebhookDeliveryView: Sendable, Equatable {
    public var deliveryRowId: Int64
    public var eventId: String
    public var type: String
    public var roomId: String?
    /// "pending", "delivered" or "failed".
    public var state: String
    public var attempts: Int
    public var nextAttemptAt: Date?
    public var lastAttemptAt: Date?
    public var lastStatus: Int?
    public var lastError: String?
    public var createdAt: Date

    public init(deliveryRowId: Int64, eventId: String, type: String, roomId: String?, state: String, attempts: Int,
                nextAttemptAt: Date?, lastAttemptAt: Date?, lastStatus: Int?, lastError: String?, createdAt: Date) {
        self.deliveryRowId = deliveryRowId
        self.eventId = eventId
        self.type = type
        self.roomId = roomId
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastAttemptAt = lastAttemptAt
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.createdAt = createdAt
    }
}

/// A delivery claimed for one attempt: what the dispatcher posts, and where.
public struct WebhookSend: Sendable, Equatable {
    public var deliveryRowId: Int64
    public var attempts: Int
    public var eventId: String
    public var type: String
    public var body: String
    public var url: String
    public var secret: String
    /// When the event happened: retries stop a day after it.
    public var eventCreatedAt: Date

    public init(deliveryRowId: Int64, attempts: Int, eventId: String, type: String, body: String, url: String,
                secret: String, eventCreatedAt: Date) {
        self.deliveryRowId = deliveryRowId
        self.attempts = attempts
        self.eventId = eventId
        self.type = type
        self.body = body
        self.url = url
        self.secret = secret
        self.eventCreatedAt = eventCreatedAt
    }
}

/// How one attempt ended.
public enum WebhookAttemptOutcome: Sendable, Equatable {
    /// A 2xx: done.
    case delivered(status: Int)
    /// Try again at `next`.
    case retry(status: Int?, error: String, next: Date)
    /// The last attempt failed: marked failed, kept visible.
    case failed(status: Int?, error: String)
    /// 410 Gone: the endpoint is disabled, its pending deliveries fail.
    case gone
}

/// Outbox SQL that both dialects run as it is.
public enum WebhookOutboxSQL {
    /// Deletes the not fanned-out events that no enabled endpoint takes; the endpoint match is
    /// the fan-out's own (an empty `events` takes every type).
    public static let dropUntaken = """
        DELETE FROM "webhookEvent" WHERE NOT "fannedOut" AND NOT EXISTS (
          SELECT 1 FROM "webhookEndpoint" p WHERE p."applicationId" = "webhookEvent"."applicationId" AND p."enabled"
            AND (p."events" = '' OR ' ' || p."events" || ' ' LIKE '% ' || "webhookEvent"."type" || ' %'))
        """

    /// One row when the outbox has work (an event to fan out or a pending delivery), none
    /// otherwise: two index seeks, no write and no date to format.
    public static let hasWork = """
        SELECT 1 WHERE EXISTS (SELECT 1 FROM "webhookEvent" WHERE "fannedOut" = FALSE)
          OR EXISTS (SELECT 1 FROM "webhookDelivery" WHERE "state" = 'pending')
        """
}

/// The webhook outbox and endpoints, behind the same promises as `ChorusStore`.
public protocol WebhookStore: Sendable {
    func insertWebhookEndpoint(_ record: WebhookEndpointRecord) async throws(StorageError) -> WebhookEndpointRecord
    func webhookEndpoints(applicationId: Int64) async throws(StorageError) -> [WebhookEndpointRecord]
    func webhookEndpoint(endpointId: String) async throws(StorageError) -> WebhookEndpointRecord?
    /// Saves an endpoint's URL, secret, event types and enabled state.
    func updateWebhookEndpoint(_ record: WebhookEndpointRecord) async throws(StorageError)
    /// Deletes an endpoint with its deliveries; false when there was none.
    func deleteWebhookEndpoint(endpointId: String) async throws(StorageError) -> Bool

    /// Adds an event that changes no stored state (its body given).
    func insertWebhookEvent(_ record: WebhookEventRecord) async throws(StorageError)
    /// Deletes, in one statement, the events not fanned out yet that no enabled endpoint of
    /// their application takes: the usual case is an application without webhooks, whose every
    /// join and leave would otherwise cost the fan-out a body and a transaction. Returns how many.
    @discardableResult
    func dropUntakenWebhookEvents() async throws(StorageError) -> Int
    /// Whether any event waits for its fan-out or any delivery is pending (due or not, claimed
    /// or not): when neither, a poll of the outbox has nothing to find.
    func hasWebhookWork() async throws(StorageError) -> Bool
    /// Events not fanned out yet, oldest first.
    func unfannedWebhookEvents(limit: Int) async throws(StorageError) -> [WebhookEventRecord]
    /// Gives the event its body and one pending delivery per enabled endpoint of its
    /// application that takes its type, once (a second call, on any node, does nothing);
    /// an event nobody takes, or whose `body` is nil (its subject is gone), is deleted.
    /// Returns the deliveries created.
    @discardableResult
    func fanOutWebhookEvent(rowId: Int64, body: String?, now: Date) async throws(StorageError) -> Int
    /// Claims up to `limit` due deliveries until `until`: each the oldest pending one of its
    /// endpoint and room (so one endpoint gets one room's events in order).
    func claimWebhookDeliveries(now: Date, until: Date, limit: Int) async throws(StorageError) -> [WebhookSend]
    /// Records one attempt's outcome and releases the claim.
    func recordWebhookAttempt(deliveryRowId: Int64, outcome: WebhookAttemptOutcome, at now: Date)
        async throws(StorageError)
    /// One endpoint's deliveries, oldest first.
    func webhookDeliveries(endpointRowId: Int64, after token: PageToken?, limit: Int) async throws(StorageError)
        -> Page<WebhookDeliveryView>

    /// The subjects a trigger names: a room row, a statistics upload row.
    func room(rowId: Int64) async throws(StorageError) -> RoomRecord?
    func statisticsUpload(rowId: Int64) async throws(StorageError) -> CallStatisticsRecord?

    /// Calls `handler` after every committed transaction that added outbox events, from any
    /// writer of this store. False when the store cannot see every writer (PostgreSQL: other
    /// nodes write too); the dispatcher then finds new events by polling alone.
    func observeWebhookEventInserts(_ handler: @escaping @Sendable () -> Void) -> Bool
}

extension WebhookStore {
    public func observeWebhookEventInserts(_ handler: @escaping @Sendable () -> Void) -> Bool { false }
}
