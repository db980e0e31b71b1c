import ChorusCore
import DTLS
import Foundation
import Logging
import NIOConcurrencyHelpers
import ChorusTestSupport
import Rooms
import Testing

/// Records routing-table changes instead of demultiplexing a real socket.
/// `@unchecked Sendable`: its mutable state is only touched under `lock`.
final class RecordingRouting: MediaRouting, @unchecked Sendable {
    private let lock = NIOLock()
    private var ufrags: Set<String> = []

    func register(ufrag: String, receiver: any DatagramReceiver) { lock.withLock { _ = ufrags.insert(ufrag) } }
    func bind(_ address: TransportAddress, to receiver: any DatagramReceiver) {}
    func unregister(ufrag: String) { lock.withLock { _ = ufrags.remove(ufrag) } }
    func unbind(_ address: TransportAddress) {}
    func register(ssrc: SSRC, receiver: any DatagramReceiver) {}
    func unregister(ssrc: SSRC) {}
    var registered: Set<String> { lock.withLock { ufrags } }
}

final class NullSink: DatagramSink {
    func send(_ datagram: [UInt8], to destination: TransportAddress) {}
}

/// A room clock that stands still: the room's timer still fires, but consent (30 s without an
/// ICE check) can never expire however long a loaded machine keeps the test from resuming.
/// On the real clock, a test that resumed 30 s after its join found its participant ended.
struct StoppedClock: RoomClock {
    func now() -> MediaTime { .seconds(1_000) }
    func date() -> Date { Date(timeIntervalSince1970: 1_800_000_000) }
}

func fixture(_ name: String) throws -> String {
    try Fixtures.sdp(name)
}

@Suite("Room joins (real offers, no socket)")
struct RoomJoinTests {
    let routing = RecordingRouting()

    func makeRoom(_ settings: RoomSettings = .defaults) throws -> Room {
        let media = MediaEnvironment(dtls: try DTLSContext(certificate: DTLSCertificate()), sink: NullSink(),
                                     routing: routing, candidateAddress: "127.0.0.1", candidatePort: 10_000,
                                     clock: StoppedClock())
        let key = RoomKey(application: ApplicationKey(randomBytes: Array(repeating: 5, count: 16)),
                          room: try RoomID(validating: "join"))
        return Room(key: key, settings: settings, logger: Logger(label: "test"), media: media)
    }

    func request(_ offer: String, user: String = "alice") throws -> JoinRequest {
        JoinRequest(callId: CallID(guid: ApplicationKey(randomBytes: (0..<16).map { _ in .random(in: 0...255) }).rawValue),
                    userId: try UserID(validating: user), displayName: nil, offer: offer)
    }

    @Test func joinAnswersAndRoutesTheUfrag() async throws {
        let room = try makeRoom()
        let answer = try await room.join(request(fixture("chrome-av-2slots.sdp")))
        #expect(answer.sdp.contains("a=ice-lite"))
        #expect(answer.sdp.contains("127.0.0.1 10000 typ host"))
        #expect(answer.snapshot.state == .progressing)
        let ufrag = try #require(answer.sdp.split(separator: "\r\n").first { $0.hasPrefix("a=ice-ufrag:") })
        let (events, _) = await room.subscribe(after: nil)
        #expect(events.map(\.name) == [.participantJoined], "\(events.map(\.event))")
        #expect(routing.registered.contains(String(ufrag.dropFirst("a=ice-ufrag:".count))))
        #expect(await room.participantList().count == 1)
    }

    @Test func theCallersHeadersAreToldInParticipantJoined() async throws {
        let room = try makeRoom()
        let plain = try request(fixture("aiortc-audio-only.sdp"))
        let headed = JoinRequest(callId: CallID(guid: ApplicationKey(randomBytes: Array(repeating: 9, count: 16)).rawValue),
                                 userId: try UserID(validating: "bob"), displayName: nil,
                                 offer: try fixture("aiortc-audio-only.sdp"), headers: ["x-ticket": "42", "lang": "sv"])
        _ = try await room.join(plain)
        _ = try await room.join(headed)
        let (events, _) = await room.subscribe(after: nil)
        #expect(events.count == 2)
        guard case .participantJoined(_, _, let first)? = events.first?.event,
              case .participantJoined(_, _, let last)? = events.last?.event
        else {
            Issue.record("not joins: \(events.map(\.event))")
            return
        }
        #expect(first.isEmpty)
        #expect(last == ["x-ticket": "42", "lang": "sv"])
    }

    @Test func fullRoomAndBadOffersAreRefused() async throws {
        var settings = RoomSettings.defaults
        settings.maxParticipants = 1
        settings.videoSlots = 1
        let room = try makeRoom(settings)
        _ = try await room.join(request(fixture("aiortc-audio-only.sdp")))
        await #expect(throws: JoinError.roomFull) { try await room.join(request(fixture("aiortc-audio-only.sdp"))) }

        let other = try makeRoom(settings)
        await #expect(throws: JoinError.self) { try await other.join(request("v=0\r\n")) }
        do {
            _ = try await other.join(request(fixture("chrome-av-2slots.sdp")))
            Issue.record("two slots accepted in a one-slot room")
        } catch {
            guard case .offerRejected(let code, _)? = error as? JoinError else { throw error }
            #expect(code == "tooManyVideoSlots")
        }
    }

    @Test func endingAndClosingEmitEventsWithCauses() async throws {
        let room = try makeRoom()
        let first = try await room.join(request(fixture("aiortc-audio-only.sdp")))
        _ = try await room.join(request(fixture("aiortc-audio-only.sdp"), user: "bob"))
        #expect(await room.end(first.snapshot.callId, cause: .kicked))
        #expect(await !room.end(first.snapshot.callId, cause: .kicked))
        await room.close(cause: .serverShutdown)
        let (events, _) = await room.subscribe(after: nil)
        let names = events.map(\.name.rawValue)
        #expect(names == ["participant.joined", "participant.joined", "participant.ended", "participant.ended", "room.closed"])
        let causes = events.compactMap { record -> EndCause? in
            if case .participantEnded(let end) = record.event { return end.cause } else { return nil }
        }
        #expect(causes == [.kicked, .serverShutdown])
        #expect(routing.registered.isEmpty)
        // Ids increase by one; resuming after the third replays only what followed.
        let ids = events.map(\.id)
        #expect(zip(ids, ids.dropFirst()).allSatisfy { $1 == $0 + 1 })
        let (replay, _) = await room.subscribe(after: ids[2])
        #expect(replay.map(\.id) == Array(ids[3...]))
    }

    @Test func muteAndPauseEmitOnChangeOnly() async throws {
        let room = try makeRoom()
        let joined = try await room.join(request(fixture("aiortc-audio-only.sdp")))
        let callId = joined.snapshot.callId
        _ = await room.update(callId, audioMuted: true, videoPaused: nil)
        _ = await room.update(callId, audioMuted: true, videoPaused: true)
        let snapshot = await room.update(callId, audioMuted: false, videoPaused: nil)
        #expect(snapshot?.audioMuted == false && snapshot?.videoPaused == true)
        let (all, _) = await room.subscribe(after: nil)
        #expect(all.dropFirst().map(\.name) == [.audioMuted, .videoPaused, .audioUnmuted])
    }
}
