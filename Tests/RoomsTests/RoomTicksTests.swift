import ChorusCore
import ChorusTestSupport
import DTLS
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import Rooms

extension Room {
    fileprivate var audioTicksRun: UInt64 { core.audioTicks }
    fileprivate var hasTimer: Bool { timer != nil }
}

/// A small room in a media environment with a tick source is ticked by that source (the media
/// port's reader) and has no timer of its own; it leaves the source when it stops ticking.
@Suite("Room: who fires its ticks")
struct RoomTicksTests {
    private let source = RecordingTickSource()
    private let clock = ManualClock()

    private func room() throws -> Room {
        let media = MediaEnvironment(dtls: try DTLSContext(certificate: DTLSCertificate()), sink: NullSink(),
                                     routing: RecordingRouting(), candidateAddress: "127.0.0.1", candidatePort: 10_000,
                                     clock: clock, consentTimeoutNanoseconds: 600_000_000_000, ticks: source)
        let key = RoomKey(application: ApplicationKey(randomBytes: Array(repeating: 7, count: 16)),
                          room: try RoomID(validating: "ticks"))
        return Room(key: key, settings: .defaults, logger: Logger(label: "test"), media: media)
    }

    private func join(_ room: Room) async throws {
        let peer = try ClientPeer(name: "a", port: 40_000, fixture: "aiortc-audio-only.sdp", seed: 3)
        _ = try await room.join(
            JoinRequest(callId: CallID(guid: ApplicationKey(randomBytes: Array(repeating: 9, count: 16)).rawValue),
                        userId: try UserID(validating: "a"), displayName: nil, offer: try peer.offer()))
    }

    /// Fails if the room keeps a timer (it would tick without the source), if a firing does not
    /// run its tick (on the caller's thread, or handed to the room's queue), or if a closed room
    /// stays in the source. The room's clock is moved by hand, 20 ms per firing.
    @Test func aSmallRoomTicksWhenTheSourceFiresIt() async throws {
        let room = try room()
        try await join(room)
        let ticker = try #require(source.all.first)
        #expect(source.all.count == 1)
        #expect(await !room.hasTimer)
        #expect(await room.audioTicksRun == 0, "no tick without a firing")
        for fired in 1...3 {
            clock.advance(milliseconds: 20)
            #expect(ticker.fire(mayRunInline: true))
            // Inline: the tick ran on this thread before `fire` returned.
            #expect(await room.audioTicksRun == UInt64(fired))
        }
        clock.advance(milliseconds: 20)
        #expect(ticker.fire(mayRunInline: false))
        // Handed to the room's queue: an actor call queued after it runs after it.
        #expect(await room.audioTicksRun == 4)
        await room.close()
        #expect(source.all.isEmpty)
    }

    /// A room that is gone leaves the source (its deinit), and a firing of its handle says so.
    @Test func aRoomThatIsGoneLeavesTheSource() async throws {
        var room: Room? = try room()
        try await join(room!)
        let ticker = try #require(source.all.first)
        room = nil
        try await eventually { source.all.isEmpty }
        #expect(!ticker.fire(mayRunInline: true))
    }
}
