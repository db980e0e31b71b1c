import ChorusCore
import ChorusTestSupport
import Glibc
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import MediaSocket

/// The media reader on a real socket: audio-only traffic is read once per room tick, just
/// before it, with each datagram's kernel arrival time; a receiver that wants prompt reads
/// (video) gets each datagram as it comes.
@Suite("Media socket: reads once per tick")
struct MediaReaderTickTests {
    /// Records each hand-over: when it came (room time) and what it held.
    final class Recorder: DatagramReceiver {
        let wantsPromptReads: Bool
        let handOvers = NIOLockedValueBox<[(at: MediaTime, datagrams: [ReceivedDatagram])]>([])
        init(prompt: Bool) { wantsPromptReads = prompt }
        func receive(_ batch: ArraySlice<ReceivedDatagram>, readerIsLight: Bool) {
            let now = MediaTime.now()
            handOvers.withLockedValue { $0.append((now, Array(batch))) }
        }
        var datagrams: [ReceivedDatagram] { handOvers.withLockedValue { $0.flatMap(\.datagrams) } }
    }

    /// Sends `count` datagrams 2 ms apart to a fresh socket whose only receiver is `recorder`,
    /// and waits for all of them.
    func exchange(_ count: Int, with recorder: Recorder) async throws {
        let router = DatagramRouter()
        router.register(ssrc: SSRC(7), receiver: recorder)
        let socket = MediaSocket(host: "127.0.0.1", port: 0, router: router, logger: Logger(label: "test"))
        let port = UInt16(try await socket.bind())
        defer { Task { await socket.closeAll() } }
        let peer = try MediaSocketBaseTests.Peer()
        for index in 0..<count {
            peer.send(MediaReaderTests.rtp(index), to: "127.0.0.1", port: port)
            usleep(2_000)
        }
        try await eventually { recorder.datagrams.count >= count }
    }

    /// 50 datagrams over 100 ms without video come in a handful of hand-overs (one per tick,
    /// not one per datagram), each at the read point before a tick, and still carry their own
    /// arrival times, 2 ms apart, not the read's. Fails if the reader reads on arrival, or
    /// stamps datagrams with the time it read them.
    @Test func audioOnlyDatagramsAreReadOncePerTickWithTheirArrivalTimes() async throws {
        let recorder = Recorder(prompt: false)
        try await exchange(50, with: recorder)
        let handOvers = recorder.handOvers.withLockedValue { $0 }
        #expect(handOvers.count <= 12, "one hand-over per tick, not per datagram: \(handOvers.count)")
        // The reads happen `lead` before a tick: their phase on the 20 ms grid.
        let phases = handOvers.map { Double($0.at.nanoseconds % ReadSchedule.period) / 1e6 }.sorted()
        let median = phases[phases.count / 2]
        let readPoint = Double(ReadSchedule.period - ReadSchedule.lead) / 1e6
        #expect(median >= readPoint && median < readPoint + 2.5, "read phases \(phases)")
        // Arrival times: spread over the sending, 2 ms apart on average, and never after the read.
        let times = recorder.datagrams.map(\.time.nanoseconds)
        let span = Double((times.max() ?? 0) - (times.min() ?? 0)) / 1e6
        #expect(span >= 80, "arrival times span \(span) ms")
        #expect(Set(times).count >= 45)
        for handOver in handOvers { #expect(handOver.datagrams.allSatisfy { $0.time <= handOver.at }) }
    }

    /// A receiver with video gets its datagrams as they come: most in a hand-over of their own.
    @Test func aPromptReceiversDatagramsAreReadOnArrival() async throws {
        let recorder = Recorder(prompt: true)
        try await exchange(50, with: recorder)
        let handOvers = recorder.handOvers.withLockedValue { $0 }
        #expect(handOvers.count >= 25, "a hand-over per datagram, not per tick: \(handOvers.count)")
    }
}
