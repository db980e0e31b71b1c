import ChorusCore
import Foundation
import Storage
import Testing

/// The store contract every implementation keeps, run once per backend.
@Suite("Storage, on SQLite and on PostgreSQL")
struct StorageTests {
    @Test(arguments: StorageBackend.allCases)
    func dataSurvivesReopening(_ backend: StorageBackend) async throws {
        let fixture = try await backend.makeFixture()
        do {
            let db = try await fixture.open()
            _ = try await makeApp(db)
            await db.close()
        }
        let reopened = try await fixture.open()
        #expect(try await reopened.applications().map(\.name) == ["test"])
        let first = try await reopened.serverSecret(named: "k") { [1, 2, 3] }
        let second = try await reopened.serverSecret(named: "k") { [9, 9, 9] }
        #expect(first == [1, 2, 3] && second == [1, 2, 3])
        await reopened.close()
    }

    @Test(arguments: StorageBackend.allCases)
    func registrationSequenceMustIncrease(_ backend: StorageBackend) async throws {
        let db = try await backend.makeStore()
        let app = try await makeApp(db)
        func accept(_ user: String, _ seq: String) async throws -> SequenceOutcome {
            try await db.acceptRegistrationSequence(applicationId: app.id!, userId: user, sequence: seq, at: Date())
        }
        #expect(try await accept("alice", "5") == .accepted)
        #expect(try await accept("alice", "5") == .replayed(lastAccepted: "5"))
        #expect(try await accept("alice", "4") == .replayed(lastAccepted: "5"))
        #expect(try await accept("bob", "1") == .accepted)
        // Numeric, not textual, order: "10" > "9", and 40-digit values compare exactly.
        #expect(try await accept("alice", "9") == .accepted)
        #expect(try await accept("alice", "10") == .accepted)
        let big = String(repeating: "9", count: 39) + "8"
        #expect(try await accept("alice", big) == .accepted)
        #expect(try await accept("alice", String(repeating: "9", count: 39) + "7") == .replayed(lastAccepted: big))
        #expect(try await accept("alice", String(repeating: "9", count: 40)) == .accepted)
        await #expect(throws: StorageError.self) { _ = try await accept("alice", "0100") }
        await #expect(throws: StorageError.self) { _ = try await accept("alice", "1e9") }
        await db.close()
    }

    @Test(arguments: StorageBackend.allCases)
    func openRoomIDsAreUniqueButReusableAfterClose(_ backend: StorageBackend) async throws {
        let db = try await backend.makeStore()
        let app = try await makeApp(db)
        let room = makeRoom(app, "r1")
        _ = try await db.insertRoom(room)
        await #expect(throws: StorageError.self) { _ = try await db.insertRoom(room) }
        #expect(try await db.closeRoom(applicationId: app.id!, roomId: "r1", at: Date()) != nil)
        #expect(try await db.closeRoom(applicationId: app.id!, roomId: "r1", at: Date()) == nil)
        #expect(try await db.openRoom(applicationId: app.id!, roomId: "r1") == nil)
        _ = try await db.insertRoom(room)
        #expect(try await db.openRoom(applicationId: app.id!, roomId: "r1") != nil)
        let all = try await db.allOpenRooms()
        #expect(all.map(\.0.roomId) == ["r1"] && all.map(\.1.id) == [app.id])
        await db.close()
    }

    @Test(arguments: StorageBackend.allCases)
    func roomPagesWalkEveryRoomOnce(_ backend: StorageBackend) async throws {
        let db = try await backend.makeStore()
        let app = try await makeApp(db)
        for i in 0..<7 { _ = try await db.insertRoom(makeRoom(app, "room\(i)")) }
        var seen: [String] = []
        var token: PageToken?
        repeat {
            let page = try await db.openRooms(applicationId: app.id!, after: token, limit: 3)
            seen += page.items.map(\.roomId)
            token = page.nextPageToken
        } while token != nil
        #expect(seen == (0..<7).map { "room\($0)" })
        #expect(throws: StorageError.invalidPageToken) { try PageToken(parsing: "garbage") }
        #expect(throws: StorageError.invalidPageToken) { try PageToken(parsing: "p1.-4") }
        #expect(try PageToken(parsing: PageToken(afterRowID: 42).text).afterRowID == 42)
        await db.close()
    }

    @Test(arguments: StorageBackend.allCases)
    func statisticsIdempotency(_ backend: StorageBackend) async throws {
        let db = try await backend.makeStore()
        let app = try await makeApp(db)
        let call = try await db.insertCall(CallRecord(callId: "00000000-0000-4000-8000-000000000001",
                                                      applicationId: app.id!, roomId: "r", userId: "alice",
                                                      displayName: nil, joinedAt: Date()))
        func upload(_ id: String, key: String?, hash: String) -> CallStatisticsRecord {
            CallStatisticsRecord(statisticsId: id, callId: call.callId, uploadedBy: "application", idempotencyKey: key,
                                 bodySHA256: hash, body: "{\"n\": \"\(id)\"}", receivedAt: Date())
        }
        guard case .created(let first) = try await db.insertStatistics(upload("s1", key: "k", hash: "h1")) else {
            Issue.record("first upload not created")
            return
        }
        guard case .replayed(let again) = try await db.insertStatistics(upload("s2", key: "k", hash: "h1")) else {
            Issue.record("retry with the same key and body was not a replay")
            return
        }
        #expect(again.statisticsId == first.statisticsId && again.body == first.body)
        #expect(try await db.insertStatistics(upload("s3", key: "k", hash: "h2")) == .keyReusedWithDifferentBody)
        if case .created = try await db.insertStatistics(upload("s4", key: nil, hash: "h1")) {} else {
            Issue.record("upload without key not created")
        }
        if case .created = try await db.insertStatistics(upload("s5", key: nil, hash: "h1")) {} else {
            Issue.record("a second upload without key not created")
        }
        #expect(try await db.statistics(callId: call.callId).map(\.statisticsId) == ["s1", "s4", "s5"])
        // An upload for a call that does not exist is refused by the foreign key.
        var orphan = upload("s6", key: nil, hash: "h1")
        orphan.callId = "00000000-0000-4000-8000-0000000000ff"
        await #expect(throws: StorageError.self) { _ = try await db.insertStatistics(orphan) }
        await db.close()
    }

    @Test(arguments: StorageBackend.allCases)
    func settingsUpdateNeverReopensAClosedRoom(_ backend: StorageBackend) async throws {
        let db = try await backend.makeStore()
        let app = try await makeApp(db, byte: 4)
        var room = try await db.insertRoom(makeRoom(app, "x"))
        room.videoSlots = 6
        #expect(try await db.updateRoomSettings(room)?.videoSlots == 6)
        #expect(try await db.openRoom(applicationId: app.id!, roomId: "x")?.videoSlots == 6)
        _ = try await db.closeRoom(applicationId: app.id!, roomId: "x", at: Date())
        room.videoSlots = 2
        #expect(try await db.updateRoomSettings(room) == nil)
        #expect(try await db.openRoom(applicationId: app.id!, roomId: "x") == nil)
        await db.close()
    }
}
