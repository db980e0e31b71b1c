import Foundation
import Storage
import Testing

/// Recording rows, once per backend: a recording is stored as it starts (with whether it
/// records each participant), ends once with its size and tracks, and a node's recordings still
/// running when it starts again are `interrupted`; each end puts its event in the outbox.
@Suite("Recordings, on SQLite and on PostgreSQL")
struct StorageRecordingTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func recording(_ id: String, _ app: ApplicationRecord, node: String = "n1") -> RecordingRecord {
        RecordingRecord(recordingId: id, applicationId: app.id!, roomId: "r", path: "/rec/\(id).opus", nodeId: node,
                        startedAt: start)
    }

    @Test(arguments: StorageBackend.allCases)
    func aRecordingEndsOnceWithItsTracks(_ backend: StorageBackend) async throws {
        let db = try await backend.makeStore()
        let app = try await makeApp(db)
        var new = recording("rec_a", app)
        new.perParticipant = true
        let stored = try await db.insertRecording(new)
        #expect(stored.perParticipant == true && stored.state == "recording" && stored.tracks == nil)
        let tracks = #"[{"callId":"c1","userId":"ann","offsetMilliseconds":0,"durationMilliseconds":20000,"bytes":81000,"path":"/rec/rec_a/c1.opus"}]"#
        let end = RecordingEnd(state: "ready", at: start.addingTimeInterval(20), durationMilliseconds: 20_000,
                               bytes: 90_000, error: nil, tracks: tracks)
        #expect(try await db.endRecording(recordingId: "rec_a", end))
        #expect(try await !db.endRecording(recordingId: "rec_a", end), "a recording ends once")
        let ended = try #require(try await db.recording(recordingId: "rec_a"))
        #expect(ended.state == "ready" && ended.bytes == 90_000 && ended.durationMilliseconds == 20_000)
        #expect(ended.tracks == tracks && ended.perParticipant == true)
        let decoded = try JSONDecoder().decode([RecordingTrackRecord].self, from: Data(try #require(ended.tracks).utf8))
        #expect(decoded.first?.userId == "ann" && decoded.first?.offsetMilliseconds == 0)
        let events = try await db.unfannedWebhookEvents(limit: 100).filter { $0.type.hasPrefix("recording.") }
        #expect(events.map(\.type) == ["recording.ready"] && events.first?.subject == "rec_a")
        await db.close()
    }

    @Test(arguments: StorageBackend.allCases)
    func aNodeThatStartsAgainInterruptsItsRunningRecordings(_ backend: StorageBackend) async throws {
        let db = try await backend.makeStore()
        let app = try await makeApp(db)
        _ = try await db.insertRecording(recording("rec_1", app))
        _ = try await db.insertRecording(recording("rec_2", app, node: "n2"))
        #expect(try await db.interruptRecordings(nodeId: "n1", at: start) == 1)
        #expect(try await db.recording(recordingId: "rec_1")?.state == "interrupted")
        #expect(try await db.recording(recordingId: "rec_2")?.state == "recording")
        #expect(try await db.recordings(applicationId: app.id!, roomId: "r").map(\.recordingId) == ["rec_1", "rec_2"])
        #expect(try await db.recording(recordingId: "rec_1")?.perParticipant == nil)
        await db.close()
    }
}
