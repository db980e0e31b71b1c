import ChorusCore
import NIOCore
import Synchronization

/// One event loop's share of a load run: the connections whose sockets the loop serves, their
/// 5 ms ticker, and how late that ticker ran. A run has one shard per core (`LoadRunner`), so
/// the generator's work spreads over the machine as the server's does, and a latency figure is
/// not the generator's own queueing behind one busy thread.
///
/// Everything but `loop` is reached through `onLoop`, which traps on an access from any other
/// thread, so the class is `Sendable` without `@unchecked`.
final class LoadShard: Sendable {
    let loop: any EventLoop
    private let onLoop: NIOLoopBoundBox<State>

    struct State {
        var participants: [LoadParticipant] = []
        /// The extra connections of a server that carries video apart (Janus VideoRoom).
        var auxiliaries: [LoadParticipant] = []
        var channels: [any Channel] = []
        /// The shared sockets read on this loop: what a tick queued on them leaves at its end.
        var sharedSockets: [LoadSharedSocket] = []
        /// The participants on the shared socket, by their loopback address (network order).
        var routes: [UInt32: LoadParticipant] = [:]
        /// How each connection hangs up.
        var hangUps: [@Sendable () async -> Void] = []
        /// How late each tick ran in the measured window, ms, and the last tick.
        var tickLags: [Double] = []
        var lastTickAt: MediaTime?
    }

    /// What one shard contributes to the runner's once-a-second sample.
    struct Sample: Sendable {
        var established = 0
        var received = 0
        var expected = 0
        var latencies: [Double] = []
    }

    /// A run's connections and tick lags once its media stopped, for the results. Taken only
    /// after every channel closed and every ticker stopped, so no loop touches these
    /// participants any more (the futures awaited order the accesses).
    struct Contents: Sendable {
        var participants: [LoadParticipant]
        var auxiliaries: [LoadParticipant]
        var tickLags: [Double]
    }

    init(loop: any EventLoop) {
        self.loop = loop
        onLoop = .makeBoxSendingValue(State(), eventLoop: loop)
    }

    var participants: [LoadParticipant] { onLoop.value.participants }
    var auxiliaries: [LoadParticipant] { onLoop.value.auxiliaries }
    var channels: [any Channel] { onLoop.value.channels }
    var hangUps: [@Sendable () async -> Void] { onLoop.value.hangUps }
    var contents: Contents {
        Contents(participants: participants, auxiliaries: auxiliaries, tickLags: onLoop.value.tickLags)
    }

    /// Takes a connection that was just handed over to this loop (`channel` nil: it is on the
    /// shared socket, whose channel the shard holds once).
    func adopt(_ participant: LoadParticipant, channel: (any Channel)?, hangUp: @escaping @Sendable () async -> Void) {
        if participant.role == .member {
            onLoop.value.participants.append(participant)
        } else {
            onLoop.value.auxiliaries.append(participant)
        }
        if let channel { onLoop.value.channels.append(channel) }
        onLoop.value.hangUps.append(hangUp)
    }

    /// Delivers what the shared socket receives for `address` to `participant`.
    func route(_ address: LoadSharedSocket.Address, to participant: LoadParticipant) {
        onLoop.value.routes[address.raw] = participant
    }

    /// The participant on the shared socket at `address` (network byte order), on the loop.
    func participant(at address: UInt32) -> LoadParticipant? {
        onLoop.value.routes[address]
    }

    /// Takes the shared socket's channel, to be closed with the others.
    func adoptShared(_ socket: LoadSharedSocket) {
        onLoop.value.channels.append(socket.channel)
        onLoop.value.sharedSockets.append(socket)
    }

    /// Every 5 ms: each connection's checks, retransmissions and due frames (a participant
    /// with nothing due is passed over: `idleUntil`), and the tick's lag once the measured
    /// window began.
    func startTicking(window: LoadWindow, maximumLags: Int) -> RepeatedTask {
        loop.scheduleRepeatedTask(initialDelay: .milliseconds(5), delay: .milliseconds(5)) { _ in
            let now = MediaTime.now()
            self.noteTick(at: now, window: window, maximumLags: maximumLags)
            for participant in self.onLoop.value.participants where participant.idleUntil <= now {
                participant.tick(now: now)
            }
            for connection in self.onLoop.value.auxiliaries { connection.tick(now: now) }
            // The frames this tick made leave now, not after the loop's next round of reads.
            for socket in self.onLoop.value.sharedSockets { socket.flush() }
        }
    }

    /// Records how late a 5 ms tick ran (after the previous one, plus 5 ms), in the window.
    private func noteTick(at now: MediaTime, window: LoadWindow, maximumLags: Int) {
        if let last = onLoop.value.lastTickAt, now >= window.from, onLoop.value.tickLags.count < maximumLags {
            onLoop.value.tickLags.append(max(0, Double(now.nanoseconds(since: last)) / 1e6 - 5))
        }
        onLoop.value.lastTickAt = now
    }

    /// The last second of this shard's participants: established, audio received and expected
    /// since the previous sample, and the latencies measured in it.
    func sample(now: MediaTime) -> Sample {
        var sample = Sample()
        for participant in onLoop.value.participants {
            if participant.connection.phase == .established { sample.established += 1 }
            let interval = participant.takeInterval()
            sample.received += interval.received
            sample.expected += interval.expected
            sample.latencies += participant.statistics.latencies.filter { now.nanoseconds(since: $0.at) < 1_000_000_000 }.map(\.ms)
        }
        return sample
    }

    /// Connections still checking or handshaking.
    var pendingHandshakes: Int {
        (participants + auxiliaries).filter { $0.connection.phase == .checking || $0.connection.phase == .handshaking }.count
    }

    /// Sets every participant's measured window (the connections count only what falls in it).
    func setWindow(from: MediaTime? = nil, until: MediaTime? = nil) {
        for participant in onLoop.value.participants {
            if let from { participant.statistics.window.from = from }
            if let until { participant.statistics.window.until = until }
        }
    }
}

/// The measured period of a run, read by every shard's ticker: from a second after the last
/// join until the media stopped. Atomics, because the shards' loops read it while the runner
/// sets it.
final class LoadWindow: Sendable {
    private let fromNanoseconds = Atomic<UInt64>(.max)
    private let untilNanoseconds = Atomic<UInt64>(.max)

    var from: MediaTime {
        get { MediaTime(nanoseconds: fromNanoseconds.load(ordering: .acquiring)) }
        set { fromNanoseconds.store(newValue.nanoseconds, ordering: .releasing) }
    }

    var until: MediaTime {
        get { MediaTime(nanoseconds: untilNanoseconds.load(ordering: .acquiring)) }
        set { untilNanoseconds.store(newValue.nanoseconds, ordering: .releasing) }
    }
}
