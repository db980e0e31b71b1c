import ChorusCore
import Foundation
import Storage
import Synchronization
import Testing

/// The webhook outbox, once per backend: the database's triggers write one event per state
/// change in that change's own transaction, a fan-out gives each event one delivery per endpoint
/// that takes it (once, however often it is asked), claims hand out one room's deliveries to one
/// endpoint in order, and each attempt's outcome is kept.
@Suite("Webhook outbox, on SQLite and on PostgreSQL")
struct StorageWebhookTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func call(_ n: Int, _ app: ApplicationRecord, room: String) -> CallRecord {
        CallRecord(callId: String(format: "00000000-0000-4000-8000-%012d", n), applicationId: app.id!, roomId: room,
                   userId: "u\(n)", displayName: nil, joinedAt: start)
    }

    func endpoint(_ app: ApplicationRecord, _ id: String, events: [String] = []) -> WebhookEndpointRecord {
        WebhookEndpointRecord(endpointId: id, applicationId: app.id!, url: "http://hooks.example/\(id)",
                              secret: "whsec_c2VjcmV0", events: events, createdAt: start)
    }

    @Test(arguments: StorageBackend.allCases)
    func everyStateChangeWritesItsEvent(_ backend: StorageBackend) async throws {
        let db = try await backend.makeStore()
        let app = try await makeApp(db)
        _ = try await db.insertRoom(makeRoom(app, "r"))
        _ = try await db.insertCall(call(1, app, room: "r"))
        _ = try await db.insertCall(call(2, app, room: "r"))
        try await db.deleteCall(callId: call(2, app, room: "r").callId)  // a refused join
        try await db.recordCallChanges([
            .established(callId: call(1, app, room: "r").callId, at: start),
            .ended(callId: call(1, app, room: "r").callId, at: start, cause: "hungUp", serverStats: nil),
        ])
        _ = try await db.insertStatistics(CallStatisticsRecord(
            statisticsId: "s1", callId: call(1, app, room: "r").callId, uploadedBy: "application", idempotencyKey: nil,
            bodySHA256: "x", body: "{}", receivedAt: start))
        _ = try await db.closeRoom(applicationId: app.id!, roomId: "r", at: start)
        let events = try await db.unfannedWebhookEvents(limit: 100)
        #expect(events.map(\.type) == ["room.started", "participant.joined", "participant.left", "call.ended",
                                       "statistics.uploaded", "room.ended"])
        #expect(events.allSatisfy { $0.roomId == "r" && $0.applicationId == app.id && $0.body == nil })
        #expect(Set(events.map(\.eventId)).count == events.count && events.allSatisfy { $0.eventId.hasPrefix("msg_") })
        #expect(events[1].subject == call(1, app, room: "r").callId)
        let roomRow = try #require(events.first?.subject.flatMap { Int64($0) })
        #expect(try await db.room(rowId: roomRow)?.roomId == "r")
        let upload = try #require(events[4].subject.flatMap { Int64($0) })
        #expect(try await db.statisticsUpload(rowId: upload)?.statisticsId == "s1")
        await db.close()
    }

    @Test(arguments: StorageBackend.allCases)
    func fanOutOnceThenClaimInOrderPerRoom(_ backend: StorageBackend) async throws {
        let db = try await backend.makeStore()
        let app = try await makeApp(db)
        let all = try await db.insertWebhookEndpoint(endpoint(app, "all"))
        _ = try await db.insertWebhookEndpoint(endpoint(app, "rooms", events: ["room.started", "room.ended"]))
        var off = endpoint(app, "off")
        off.enabled = false
        _ = try await db.insertWebhookEndpoint(off)
        for room in ["a", "b"] {
            _ = try await db.insertRoom(makeRoom(app, room))
            _ = try await db.insertCall(call(room == "a" ? 1 : 2, app, room: room))
        }
        let events = try await db.unfannedWebhookEvents(limit: 100)
        #expect(events.count == 4)
        var created = 0
        for event in events {
            created += try await db.fanOutWebhookEvent(rowId: event.id!, body: #"{"n":\#(event.id!)}"#, now: start)
            #expect(try await db.fanOutWebhookEvent(rowId: event.id!, body: "{}", now: start) == 0)  // once only
        }
        #expect(created == 6)  // "all" takes 4, "rooms" 2, "off" none
        #expect(try await db.unfannedWebhookEvents(limit: 100).isEmpty)

        // One claim: the head of each (endpoint, room) only — 2 for "all", 2 for "rooms".
        let first = try await db.claimWebhookDeliveries(now: start, until: start.addingTimeInterval(30), limit: 50)
        #expect(first.count == 4)
        #expect(Set(first.filter { $0.url.hasSuffix("/all") }.map(\.type)) == ["room.started"])
        // Claimed ones are not handed out again until the claim lapses.
        #expect(try await db.claimWebhookDeliveries(now: start, until: start, limit: 50).isEmpty)
        for send in first where send.url.hasSuffix("/all") {
            try await db.recordWebhookAttempt(deliveryRowId: send.deliveryRowId, outcome: .delivered(status: 204),
                                              at: start)
        }
        let second = try await db.claimWebhookDeliveries(now: start, until: start.addingTimeInterval(30), limit: 50)
        #expect(second.map(\.type) == ["participant.joined", "participant.joined"])
        // A retry keeps the room's later events back; a 410 disables the endpoint.
        try await db.recordWebhookAttempt(deliveryRowId: second[0].deliveryRowId,
                                          outcome: .retry(status: 500, error: "status 500", next: start.addingTimeInterval(5)),
                                          at: start)
        try await db.recordWebhookAttempt(deliveryRowId: second[1].deliveryRowId, outcome: .gone, at: start)
        let disabled = try #require(try await db.webhookEndpoint(endpointId: "all"))
        #expect(!disabled.enabled && disabled.disabledReason != nil)
        let deliveries = try await db.webhookDeliveries(endpointRowId: all.id!, after: nil, limit: 10).items
        // In event order (room a's two, then room b's); the retrying one failed with the endpoint.
        #expect(deliveries.map(\.type) == ["room.started", "participant.joined", "room.started", "participant.joined"])
        #expect(deliveries.map(\.state) == ["delivered", "failed", "delivered", "failed"])
        #expect(Set([deliveries[1].lastError, deliveries[3].lastError]) == ["endpointGone", "endpointDisabled"])
        #expect(deliveries[1].attempts == 1 && deliveries[3].attempts == 1)
        #expect(try await db.deleteWebhookEndpoint(endpointId: "all"))
        #expect(try await db.webhookEndpoints(applicationId: app.id!).map(\.endpointId) == ["rooms", "off"])
        await db.close()
    }

    /// Events nobody takes go in one statement before the fan-out builds any body: all of an
    /// application without endpoints (or with its endpoint disabled), and the types an
    /// endpoint's filter leaves out. Fanned-out events stay, whatever their endpoints do later.
    @Test(arguments: StorageBackend.allCases)
    func untakenEventsAreDroppedBeforeFanOut(_ backend: StorageBackend) async throws {
        let db = try await backend.makeStore()
        let none = try await makeApp(db, byte: 1), rooms = try await makeApp(db, byte: 2), off = try await makeApp(db, byte: 3)
        _ = try await db.insertWebhookEndpoint(endpoint(rooms, "rooms", events: ["room.started"]))
        var disabled = endpoint(off, "off")
        disabled.enabled = false
        _ = try await db.insertWebhookEndpoint(disabled)
        for (n, app) in [none, rooms, off].enumerated() {
            _ = try await db.insertRoom(makeRoom(app, "r"))
            _ = try await db.insertCall(call(n + 1, app, room: "r"))
        }
        #expect(try await db.unfannedWebhookEvents(limit: 100).count == 6)
        #expect(try await db.dropUntakenWebhookEvents() == 5)
        let kept = try await db.unfannedWebhookEvents(limit: 100)
        #expect(kept.map(\.type) == ["room.started"] && kept.first?.applicationId == rooms.id)
        #expect(try await db.fanOutWebhookEvent(rowId: kept[0].id!, body: "{}", now: start) == 1)
        var gone = try #require(try await db.webhookEndpoint(endpointId: "rooms"))
        gone.enabled = false
        try await db.updateWebhookEndpoint(gone)
        #expect(try await db.dropUntakenWebhookEvents() == 0)
        #expect(try await db.webhookDeliveries(endpointRowId: gone.id!, after: nil, limit: 10).items.count == 1)
        await db.close()
    }

    /// The outbox says it has work while an event waits for its fan-out or a delivery is
    /// pending, and only then (the dispatcher's timer skips its transactions otherwise).
    @Test(arguments: StorageBackend.allCases)
    func theOutboxSaysWhetherItHasWork(_ backend: StorageBackend) async throws {
        let db = try await backend.makeStore()
        let app = try await makeApp(db)
        #expect(try await db.hasWebhookWork() == false)
        _ = try await db.insertWebhookEndpoint(endpoint(app, "rooms", events: ["room.started"]))
        _ = try await db.insertRoom(makeRoom(app, "r"))
        #expect(try await db.hasWebhookWork() == true)  // room.started, not fanned out
        let event = try #require(try await db.unfannedWebhookEvents(limit: 10).first)
        #expect(try await db.fanOutWebhookEvent(rowId: event.id!, body: "{}", now: start) == 1)
        #expect(try await db.hasWebhookWork() == true)  // its delivery is pending
        let send = try #require(try await db.claimWebhookDeliveries(now: start, until: start + 30, limit: 10).first)
        #expect(try await db.hasWebhookWork() == true)  // claimed, still pending
        try await db.recordWebhookAttempt(deliveryRowId: send.deliveryRowId, outcome: .delivered(status: 200), at: start)
        #expect(try await db.hasWebhookWork() == false)
        await db.close()
    }

    /// SQLite tells the dispatcher of each commit that added outbox rows (a trigger's or a
    /// direct insert), once per transaction and not for the dispatcher's own fan-out and
    /// claims; PostgreSQL, which other nodes write too, says it cannot tell.
    @Test(arguments: StorageBackend.allCases)
    func outboxInsertsAreObservedOnSQLiteOnly(_ backend: StorageBackend) async throws {
        let db = try await backend.makeStore()
        let app = try await makeApp(db)
        let commits = Counter()
        let observed = db.observeWebhookEventInserts { commits.add() }
        #expect(observed == (backend == .sqlite))
        guard observed else { return await db.close() }
        _ = try await db.insertWebhookEndpoint(endpoint(app, "all"))
        #expect(commits.value == 0)
        _ = try await db.insertRoom(makeRoom(app, "r"))  // the room trigger's event
        #expect(commits.value == 1)
        _ = try await db.insertCall(call(1, app, room: "r"))
        #expect(commits.value == 2)
        // participant.left and call.ended, in one transaction: one wake-up.
        try await db.recordCallChanges([
            .ended(callId: call(1, app, room: "r").callId, at: start, cause: "hungUp", serverStats: nil),
        ])
        #expect(commits.value == 3)
        try await db.insertWebhookEvent(WebhookEventRecord(
            eventId: "msg_x", applicationId: app.id!, roomId: "r", type: "recording.ready", body: "{}", createdAt: start))
        #expect(commits.value == 4)
        for event in try await db.unfannedWebhookEvents(limit: 100) {
            try await db.fanOutWebhookEvent(rowId: event.id!, body: "{}", now: start)
        }
        #expect(try await db.claimWebhookDeliveries(now: start, until: start.addingTimeInterval(30), limit: 50).count > 0)
        #expect(commits.value == 4)
        await db.close()
    }
}

/// A count that a store's callback may bump from its own queue.
private final class Counter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}
