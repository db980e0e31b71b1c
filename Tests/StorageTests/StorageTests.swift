import ChorusCore
import Foundation
import Storage
import Testing

/// A database file in a fresh temporary folder, removed by the caller.
func temporaryDatabasePath() -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-storage-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir.appendingPathComponent("test.sqlite").path
}

@Suite("Storage on a real SQLite file")
struct StorageTests {
    let path = temporaryDatabasePath()

    func makeApp(_ db: ChorusDatabase) async throws -> ApplicationRecord {
        try await db.insertApplication(ApplicationRecord(
            key: ApplicationKey(randomBytes: Array(repeating: 1, count: 16)), secret: "c2VjcmV0c2VjcmV0c2VjcmV0",
            name: "test", createdAt: Date()))
    }

    @Test func walAndFullSynchronousAreOn() async throws {
        let db = try ChorusDatabase(path: path)
        #expect(try await db.pragma("journal_mode") == "wal")
        #expect(try await db.pragma("synchronous") == "2") // FULL
        #expect(try await db.integrityCheck() == "ok")
    }

    @Test func dataSurvivesReopening() async throws {
        do {
            let db = try ChorusDatabase(path: path)
            _ = try await makeApp(db)
        }
        let reopened = try ChorusDatabase(path: path)
        #expect(try await reopened.applications().map(\.name) == ["test"])
        let first = try await reopened.serverSecret(named: "k") { [1, 2, 3] }
        let second = try await reopened.serverSecret(named: "k") { [9, 9, 9] }
        #expect(first == [1, 2, 3] && second == [1, 2, 3])
    }

    @Test func registrationSequenceMustIncrease() async throws {
        let db = try ChorusDatabase(path: path)
        let app = try await makeApp(db)
        let greater: @Sendable (String, String) -> Bool = { Int($0)! > Int($1)! }
        func accept(_ user: String, _ seq: String) async throws -> SequenceOutcome {
            try await db.acceptRegistrationSequence(applicationId: app.id!, userId: user, sequence: seq, at: Date(),
                                                    isGreater: greater)
        }
        #expect(try await accept("alice", "5") == .accepted)
        #expect(try await accept("alice", "5") == .replayed(lastAccepted: "5"))
        #expect(try await accept("alice", "4") == .replayed(lastAccepted: "5"))
        #expect(try await accept("bob", "1") == .accepted)
        #expect(try await accept("alice", "6") == .accepted)
    }

    @Test func openRoomIDsAreUniqueButReusableAfterClose() async throws {
        let db = try ChorusDatabase(path: path)
        let app = try await makeApp(db)
        let room = RoomRecord(applicationId: app.id!, roomId: "r1", maxParticipants: 10, mixedSpeakers: 3,
                              videoSlots: 4, createdAt: Date())
        _ = try await db.insertRoom(room)
        await #expect(throws: StorageError.self) { _ = try await db.insertRoom(room) }
        #expect(try await db.closeRoom(applicationId: app.id!, roomId: "r1", at: Date()) != nil)
        #expect(try await db.openRoom(applicationId: app.id!, roomId: "r1") == nil)
        _ = try await db.insertRoom(room)
        #expect(try await db.openRoom(applicationId: app.id!, roomId: "r1") != nil)
    }

    @Test func roomPagesWalkEveryRoomOnce() async throws {
        let db = try ChorusDatabase(path: path)
        let app = try await makeApp(db)
        for i in 0..<7 {
            _ = try await db.insertRoom(RoomRecord(applicationId: app.id!, roomId: "room\(i)", maxParticipants: 10,
                                                   mixedSpeakers: 3, videoSlots: 4, createdAt: Date()))
        }
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
    }

    @Test func statisticsIdempotency() async throws {
        let db = try ChorusDatabase(path: path)
        let app = try await makeApp(db)
        let call = try await db.insertCall(CallRecord(callId: "00000000-0000-4000-8000-000000000001",
                                                      applicationId: app.id!, roomId: "r", userId: "alice",
                                                      displayName: nil, joinedAt: Date()))
        func upload(_ id: String, key: String?, hash: String) -> CallStatisticsRecord {
            CallStatisticsRecord(statisticsId: id, callId: call.callId, uploadedBy: "application", idempotencyKey: key,
                                 bodySHA256: hash, body: "{}", receivedAt: Date())
        }
        guard case .created(let first) = try await db.insertStatistics(upload("s1", key: "k", hash: "h1")) else {
            Issue.record("first upload not created")
            return
        }
        guard case .replayed(let again) = try await db.insertStatistics(upload("s2", key: "k", hash: "h1")) else {
            Issue.record("retry with the same key and body was not a replay")
            return
        }
        #expect(again.statisticsId == first.statisticsId)
        #expect(try await db.insertStatistics(upload("s3", key: "k", hash: "h2")) == .keyReusedWithDifferentBody)
        if case .created = try await db.insertStatistics(upload("s4", key: nil, hash: "h1")) {} else {
            Issue.record("upload without key not created")
        }
        #expect(try await db.statistics(callId: call.callId).map(\.statisticsId) == ["s1", "s4"])
    }
}

@Suite("Storage races")
struct StorageRaceTests {
    @Test func settingsUpdateNeverReopensAClosedRoom() async throws {
        let db = try ChorusDatabase(path: temporaryDatabasePath())
        let app = try await db.insertApplication(ApplicationRecord(
            key: ApplicationKey(randomBytes: Array(repeating: 4, count: 16)), secret: "eA==", name: "t",
            createdAt: Date()))
        var room = try await db.insertRoom(RoomRecord(applicationId: app.id!, roomId: "x", maxParticipants: 10,
                                                      mixedSpeakers: 3, videoSlots: 4, createdAt: Date()))
        _ = try await db.closeRoom(applicationId: app.id!, roomId: "x", at: Date())
        room.videoSlots = 2
        #expect(try await db.updateRoomSettings(room) == nil)
        #expect(try await db.openRoom(applicationId: app.id!, roomId: "x") == nil)
    }
}
