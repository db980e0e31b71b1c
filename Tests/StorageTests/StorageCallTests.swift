import ChorusCore
import Foundation
import Storage
import Testing

/// Call rows: the listing filters and pages, and the lifecycle writes, once per backend.
@Suite("Call records, on SQLite and on PostgreSQL")
struct StorageCallTests {
    func call(_ n: Int, _ app: ApplicationRecord, room: String, user: String, at time: Date) -> CallRecord {
        CallRecord(callId: String(format: "00000000-0000-4000-8000-%012d", n), applicationId: app.id!, roomId: room,
                   userId: user, displayName: n.isMultiple(of: 2) ? "Caller \(n)" : nil, joinedAt: time)
    }

    @Test(arguments: StorageBackend.allCases)
    func lifecycleChangesOfManyCallsInOneBatch(_ backend: StorageBackend) async throws {
        let db = try await backend.makeStore()
        let app = try await makeApp(db)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        for n in 0..<3 { _ = try await db.insertCall(call(n, app, room: "r", user: "u", at: start)) }
        let id = { (n: Int) in String(format: "00000000-0000-4000-8000-%012d", n) }
        try await db.recordCallChanges([
            .established(callId: id(0), at: start.addingTimeInterval(1)),
            .established(callId: id(1), at: start.addingTimeInterval(2)),
            .ended(callId: id(0), at: start.addingTimeInterval(5), cause: "hungUp", serverStats: #"{"packetsLost":1}"#),
            .ended(callId: id(404), at: start, cause: "kicked", serverStats: nil),  // no such call: skipped
        ])
        let first = try #require(try await db.call(callId: id(0)))
        #expect(first.state == "ended" && first.endCause == "hungUp" && first.serverStats == #"{"packetsLost":1}"#)
        #expect(first.establishedAt == start.addingTimeInterval(1) && first.endedAt == start.addingTimeInterval(5))
        #expect(try await db.call(callId: id(1))?.state == "established")
        #expect(try await db.call(callId: id(2))?.state == "progressing")
        try await db.recordCallChanges([])
    }

    @Test(arguments: StorageBackend.allCases)
    func filtersAndPages(_ backend: StorageBackend) async throws {
        let db = try await backend.makeStore()
        let app = try await makeApp(db)
        let other = try await makeApp(db, byte: 2)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        for n in 0..<6 {
            _ = try await db.insertCall(call(n, app, room: n < 4 ? "a" : "b", user: n.isMultiple(of: 2) ? "u1" : "u2",
                                             at: start.addingTimeInterval(Double(n) * 60)))
        }
        _ = try await db.insertCall(call(99, other, room: "a", user: "u1", at: start))
        func ids(_ filter: CallFilter, limit: Int = 50) async throws -> [String] {
            var result: [String] = []
            var token: PageToken?
            repeat {
                let page = try await db.calls(filter, after: token, limit: limit)
                result += page.items.map { String($0.callId.suffix(2)) }
                token = page.nextPageToken
            } while token != nil
            return result
        }
        #expect(try await ids(CallFilter(applicationId: app.id!), limit: 4) == ["00", "01", "02", "03", "04", "05"])
        #expect(try await ids(CallFilter(applicationId: app.id!, roomId: "a")) == ["00", "01", "02", "03"])
        #expect(try await ids(CallFilter(applicationId: app.id!, roomId: "a", userId: "u2")) == ["01", "03"])
        #expect(try await ids(CallFilter(applicationId: app.id!, from: start.addingTimeInterval(120),
                                         to: start.addingTimeInterval(240))) == ["02", "03"])
        #expect(try await ids(CallFilter(applicationId: other.id!)) == ["99"])
        let stored = try #require(try await db.call(callId: call(2, app, room: "", user: "", at: start).callId))
        #expect(stored.displayName == "Caller 2" && stored.state == "progressing" && stored.endedAt == nil)
        #expect(abs(stored.joinedAt.timeIntervalSince(start.addingTimeInterval(120))) < 0.001)
        await db.close()
    }

    @Test(arguments: StorageBackend.allCases)
    func lifecycleWrites(_ backend: StorageBackend) async throws {
        let db = try await backend.makeStore()
        let app = try await makeApp(db)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        var inserted = call(1, app, room: "r", user: "u", at: start)
        inserted.headers = #"{"x-app":"café"}"#
        var record = try await db.insertCall(inserted)
        #expect(record.id != nil && record.headers == #"{"x-app":"café"}"#)
        let ended = start.addingTimeInterval(90)
        #expect(try await db.modifyCall(callId: record.callId) { call in
            call.state = "ended"
            call.endedAt = ended
            call.endCause = "hungUp"
            call.serverStats = #"{"packets":3}"#
        })
        #expect(try await db.modifyCall(callId: "00000000-0000-4000-8000-00000000dead") { $0.state = "x" } == false)
        let read = try #require(try await db.call(callId: record.callId))
        #expect(read.state == "ended" && read.endCause == "hungUp" && read.serverStats == #"{"packets":3}"#)
        #expect(read.headers == #"{"x-app":"café"}"#)
        #expect(abs((read.endedAt ?? .distantPast).timeIntervalSince(ended)) < 0.001)
        record = read
        record.establishedAt = start.addingTimeInterval(1)
        try await db.updateCall(record)
        #expect(try await db.call(callId: record.callId)?.establishedAt != nil)
        try await db.deleteCall(callId: record.callId)
        #expect(try await db.call(callId: record.callId) == nil)
        await db.close()
    }
}
