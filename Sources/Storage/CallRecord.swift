import Foundation
import GRDB

/// One participant's stay in one room: joined → established → ended, with the end cause and
/// the server's own measurements (a JSON object) written at call end.
public struct CallRecord: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "call"
    public var id: Int64?
    public var callId: String
    public var applicationId: Int64
    public var roomId: String
    public var userId: String
    public var displayName: String?
    /// "progressing", "established" or "ended".
    public var state: String
    public var joinedAt: Date
    public var establishedAt: Date?
    public var endedAt: Date?
    /// "hungUp", "kicked", "timeout", "roomClosed", "failed", "serverShutdown" or "nodeLost".
    public var endCause: String?
    /// JSON object of server-measured statistics, written when the call ends.
    public var serverStats: String?
    /// The node whose room served the call (nil for calls stored before clustering).
    public var nodeId: String?
    /// The caller's custom headers given at join, a JSON object of strings (nil: none given).
    public var headers: String?

    public init(callId: String, applicationId: Int64, roomId: String, userId: String,
                displayName: String?, joinedAt: Date) {
        self.callId = callId
        self.applicationId = applicationId
        self.roomId = roomId
        self.userId = userId
        self.displayName = displayName
        self.state = "progressing"
        self.joinedAt = joinedAt
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }
}

/// One change of a call's lifecycle, as the room reports it.
public enum CallChange: Sendable, Equatable {
    case established(callId: String, at: Date)
    case ended(callId: String, at: Date, cause: String?, serverStats: String?)
    /// An event that changes no record but goes out as a webhook (call quality), with its
    /// body; written in order with the call changes around it. The application is found by
    /// its key, so a room-wide event (no call) is written too.
    case webhookEvent(WebhookEventChange)

    /// The change applied to a stored call.
    public func apply(to call: inout CallRecord) {
        switch self {
        case .established(_, let time):
            call.state = "established"
            call.establishedAt = time
        case .ended(_, let time, let cause, let stats):
            call.state = "ended"
            call.endedAt = time
            call.endCause = cause
            call.serverStats = stats
        case .webhookEvent:
            break
        }
    }

    public var callId: String {
        switch self {
        case .established(let callId, _), .ended(let callId, _, _, _): callId
        case .webhookEvent(let event): event.callId ?? ""
        }
    }
}

/// A webhook event the rooms raise (not a state change): see `CallChange.webhookEvent`.
public struct WebhookEventChange: Sendable, Equatable {
    public var eventId: String
    public var applicationKey: String
    public var roomId: String
    public var callId: String?
    public var type: String
    public var body: String
    public var at: Date

    public init(eventId: String, applicationKey: String, roomId: String, callId: String?, type: String, body: String,
                at: Date) {
        self.eventId = eventId
        self.applicationKey = applicationKey
        self.roomId = roomId
        self.callId = callId
        self.type = type
        self.body = body
        self.at = at
    }
}

/// Filters of `GET /v1/calls`; nil fields do not filter.
public struct CallFilter: Sendable, Equatable {
    public var applicationId: Int64
    public var roomId: String?
    public var userId: String?
    public var from: Date?
    public var to: Date?

    public init(applicationId: Int64, roomId: String? = nil, userId: String? = nil, from: Date? = nil,
                to: Date? = nil) {
        self.applicationId = applicationId
        self.roomId = roomId
        self.userId = userId
        self.from = from
        self.to = to
    }
}

extension SQLiteStore {
    public func insertCall(_ record: CallRecord) async throws(StorageError) -> CallRecord {
        try await insert(record)
    }

    /// Saves a call's changed fields (state transitions, end cause, server statistics).
    public func updateCall(_ record: CallRecord) async throws(StorageError) {
        try await write { db in try record.update(db) }
    }

    public func call(callId: String) async throws(StorageError) -> CallRecord? {
        try await read { db in try CallRecord.filter(Column("callId") == callId).fetchOne(db) }
    }

    /// Calls of one application matching `filter`, oldest first, `limit` per page.
    public func calls(_ filter: CallFilter, after token: PageToken?, limit: Int) async throws(StorageError)
        -> Page<CallRecord>
    {
        try await read { db in
            var request = CallRecord
                .filter(Column("applicationId") == filter.applicationId)
                .filter(Column("id") > (token?.afterRowID ?? 0))
            if let roomId = filter.roomId { request = request.filter(Column("roomId") == roomId) }
            if let userId = filter.userId { request = request.filter(Column("userId") == userId) }
            if let from = filter.from { request = request.filter(Column("joinedAt") >= from) }
            if let to = filter.to { request = request.filter(Column("joinedAt") < to) }
            let rows = try request.order(Column("id")).limit(limit + 1).fetchAll(db)
            return Self.page(rows, limit: limit) { $0.id ?? 0 }
        }
    }
}

extension SQLiteStore {
    /// Removes a call that never started (its join was refused).
    public func deleteCall(callId: String) async throws(StorageError) {
        try await write { db in _ = try CallRecord.filter(Column("callId") == callId).deleteAll(db) }
    }

    public func recordCallChanges(_ changes: [CallChange]) async throws(StorageError) {
        try await write { db in
            for change in changes {
                if case .webhookEvent(let event) = change {
                    try db.execute(sql: """
                        INSERT INTO "webhookEvent"("eventId", "applicationId", "roomId", "type", "subject", "body",
                                                   "createdAt", "fannedOut")
                        SELECT ?, "id", ?, ?, ?, ?, ?, FALSE FROM "application" WHERE "key" = ?
                        """, arguments: [event.eventId, event.roomId, event.type, event.callId, event.body, event.at,
                                         event.applicationKey])
                    continue
                }
                guard var call = try CallRecord.filter(Column("callId") == change.callId).fetchOne(db) else { continue }
                change.apply(to: &call)
                try call.update(db)
            }
        }
    }

    /// Applies `change` to a stored call in one transaction; false when there is no such call.
    @discardableResult
    public func modifyCall(callId: String, _ change: @escaping @Sendable (inout CallRecord) -> Void)
        async throws(StorageError) -> Bool
    {
        try await write { db in
            guard var call = try CallRecord.filter(Column("callId") == callId).fetchOne(db) else { return false }
            change(&call)
            try call.update(db)
            return true
        }
    }
}
