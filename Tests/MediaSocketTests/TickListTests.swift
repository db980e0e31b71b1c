import ChorusCore
import ChorusTestSupport
import Glibc
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import MediaSocket

/// The media port's reader fires the ticks of the rooms in its `TickList`: once per 20 ms grid
/// point, at its read before the tick and after that read's hand-overs, on its own thread.
@Suite("Media socket: the reader fires the rooms' ticks")
struct TickListTests {
    /// One log of what the reader did, in order: hand-overs and firings, with their times.
    final class Log: Sendable {
        enum Entry { case handOver(MediaTime), fire(MediaTime, inline: Bool) }
        let entries = NIOLockedValueBox<[Entry]>([])
        func append(_ entry: Entry) { entries.withLockedValue { $0.append(entry) } }
        var fires: [(at: MediaTime, inline: Bool)] {
            entries.withLockedValue { $0.compactMap { if case .fire(let at, let inline) = $0 { (at, inline) } else { nil } } }
        }
    }

    final class Room: DatagramReceiver, TickReceiver {
        let log: Log
        let wantsPromptReads: Bool
        /// Fires after which the room says it is gone (nil: never).
        let lifetime: Int?
        private let fired = NIOLockedValueBox(0)
        init(log: Log, prompt: Bool = false, lifetime: Int? = nil) {
            self.log = log
            wantsPromptReads = prompt
            self.lifetime = lifetime
        }
        func receive(_ batch: ArraySlice<ReceivedDatagram>, readerIsLight: Bool) { log.append(.handOver(.now())) }
        func fire(mayRunInline: Bool) -> Bool {
            let count = fired.withLockedValue { $0 += 1; return $0 }
            if let lifetime, count > lifetime { return false }
            log.append(.fire(.now(), inline: mayRunInline))
            return true
        }
    }

    /// A bound socket whose router sends SSRC 7 to `room`, and a peer sending to it.
    func socket(for room: Room) async throws -> (MediaSocket, MediaSocketBaseTests.Peer, UInt16) {
        let router = DatagramRouter()
        router.register(ssrc: SSRC(7), receiver: room)
        let socket = MediaSocket(host: "127.0.0.1", port: 0, router: router, logger: Logger(label: "test"))
        let port = UInt16(try await socket.bind())
        return (socket, try MediaSocketBaseTests.Peer(), port)
    }

    static func phase(_ time: MediaTime) -> Double { Double(time.nanoseconds % ReadSchedule.period) / 1e6 }

    /// Over 100 ms of audio-only traffic the room's tick fires once per 20 ms grid point, at the read
    /// point before each grid tick, on the reader's time budget, and right after the read's
    /// hand-over (one wake-up for both). Fails if the ticks are not fired, fired off the grid,
    /// or before the read.
    @Test func ticksFireAtTheReadPointAfterTheRead() async throws {
        let log = Log()
        let room = Room(log: log)
        let (socket, peer, port) = try await socket(for: room)
        defer { Task { await socket.closeAll() } }
        let start = MediaTime.now()
        socket.ticks.add(room)
        for index in 0..<50 {
            peer.send(MediaReaderTests.rtp(index), to: "127.0.0.1", port: port)
            usleep(2_000)
        }
        try await Task.sleep(for: .milliseconds(30))
        socket.ticks.remove(room)
        let points = Int((MediaTime.now().nanoseconds - start.nanoseconds) / ReadSchedule.period)
        let fires = log.fires
        #expect(fires.count >= 5 && fires.count <= points + 2, "\(fires.count) firings over \(points) grid points")
        // Inline unless the reader thread was descheduled for the 3 ms budget between the
        // firing's start and the room's tick (the whole Swift suite runs at once on two cores:
        // seen once in a `make test`); the budget itself is `firingsRunInlineWithinTheirBudget`'s.
        #expect(fires.filter(\.inline).count * 2 > fires.count, "\(fires.filter(\.inline).count) of \(fires.count) inline")
        let phases = fires.map { Self.phase($0.at) }.sorted()
        let readPoint = Double(ReadSchedule.period - ReadSchedule.lead) / 1e6
        #expect(phases[phases.count / 2] >= readPoint && phases[phases.count / 2] < readPoint + 2.5, "\(phases)")
        // Each hand-over of a read before a tick is followed by that tick's firing.
        let entries = log.entries.withLockedValue { $0 }
        var followed = 0
        var handOvers = 0
        for (index, entry) in entries.enumerated() {
            guard case .handOver(let at) = entry else { continue }
            handOvers += 1
            if index + 1 < entries.count, case .fire(let fired, _) = entries[index + 1],
               fired.nanoseconds - at.nanoseconds < 1_000_000 { followed += 1 }
        }
        #expect(handOvers >= 4 && followed >= handOvers - 2, "\(followed) of \(handOvers) hand-overs followed by a firing")
    }

    /// A room added while the reader waits on a prompt socket (a video participant's datagram
    /// came) starts ticking at once and then once per tick, not in a busy loop; a room that says
    /// it is gone is dropped from the list.
    @Test func anAddedRoomTicksOnTimeAndAGoneOneIsDropped() async throws {
        let log = Log()
        let room = Room(log: log, prompt: true, lifetime: 8)
        let (socket, peer, port) = try await socket(for: room)
        defer { Task { await socket.closeAll() } }
        peer.send(MediaReaderTests.rtp(0), to: "127.0.0.1", port: port)
        try await eventually { log.entries.withLockedValue { !$0.isEmpty } }
        try await Task.sleep(for: .milliseconds(50))
        let added = MediaTime.now()
        socket.ticks.add(room)
        try await eventually { log.fires.count >= 1 }
        let first = try #require(log.fires.first).at
        // The add wakes the reader, which fires the new room at once. Without the wake it
        // would sleep until the next datagram (none comes here). The bound leaves room for
        // the full suite's scheduling on two cores (17 ms was seen once under a 15 ms bound).
        #expect(first.nanoseconds - added.nanoseconds < 100_000_000, "first firing after the add")
        try await eventually { socket.ticks.count == 0 }
        let fires = log.fires
        #expect(fires.count == 8)
        // One firing per grid point: ~20 ms apart on average after the first. A busy loop would
        // fire all eight within a millisecond; a late firing may come just before the next
        // read point, so single gaps are not bounded, only their mean.
        let gaps = zip(fires.dropFirst(), fires.dropFirst(2)).map { Double($1.at.nanoseconds - $0.at.nanoseconds) / 1e6 }
        let meanGap = gaps.reduce(0, +) / Double(gaps.count)
        #expect(meanGap >= 15 && meanGap < 40, "gaps \(gaps)")
    }

    /// The reader's firing on a clock the test gives: due only at the read point before a grid
    /// point, its rooms fired on the reader's thread while within the 3 ms budget of the
    /// firing's start and handed over after it, and a room that is gone leaves the list.
    @Test func firingsRunInlineWithinTheirBudget() {
        let list = TickList()
        let log = Log()
        let rooms = [Room(log: log), Room(log: log), Room(log: log)]
        for room in rooms { list.add(room) }
        var firing = TickFiring(list: list)
        firing.fireIfDue(now: 1_000_000_000, clock: { 1_000_000_000 })  // the first firing: at once
        #expect(log.fires.count == 3)
        let start = firing.next
        #expect(start == ReadSchedule.readPoint(after: 1_000_000_000))
        firing.fireIfDue(now: start - 1, clock: { start })
        #expect(log.fires.count == 3, "fired before its read point")
        // The rooms' ticks start 1 ms, 2.9 ms and 3.5 ms into the firing.
        var clock: [UInt64] = [start + 1_000_000, start + 2_900_000, start + 3_500_000]
        firing.fireIfDue(now: start, clock: { clock.removeFirst() })
        #expect(log.fires.suffix(3).filter(\.inline).count == 2, "the tick 3.5 ms into the firing was not handed over")
        #expect(firing.next == ReadSchedule.readPoint(after: start))
        firing.fireIfDue(now: start + 1_000, clock: { start + 1_000 })
        #expect(log.fires.count == 6, "fired twice in one grid period")
    }
}
