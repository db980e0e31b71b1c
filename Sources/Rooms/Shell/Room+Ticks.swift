import ChorusCore
import Dispatch
import Synchronization

extension Room {
    /// Starts the room's ticks when it has something to tick for, or moves them to the driver
    /// its size calls for: a room of fewer than `inlineDatagramLimit` participants is fired by
    /// the media environment's `TickSource` (the port's reader, right after its read before
    /// each tick: no wake-up of its own), a bigger one, or one without a source, by a timer on
    /// its queue. A room on the border may briefly have both: the tick grid runs each tick once.
    func startTicksIfNeeded() {
        guard core.needsTicks else { return }
        if let source = media?.ticks, ticksFromSource {
            if ticker == nil {
                let ticker = RoomTicker(room: self)
                self.ticker = ticker
                source.add(ticker)
            }
            stopTimer()
        } else {
            if timer == nil { startTimer() }
            stopTicker()
        }
    }

    /// Whether the tick source is this room's driver: it has one, and the room is small.
    private var ticksFromSource: Bool { media?.ticks != nil && connections.count < Self.inlineDatagramLimit }

    /// Stops every tick driver: the room has nothing to tick for, or is closed.
    func stopTicks() {
        stopTimer()
        stopTicker()
    }

    private func startTimer() {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        // Every room ticks on one process-wide 20 ms grid: Dispatch then fires all rooms' timers
        // in one wake-up of its timer thread, and the worker threads run the rooms' ticks back
        // to back instead of waking for each room at its own phase.
        let period = UInt64(RoomCore.tickMilliseconds) * 1_000_000
        let first = (DispatchTime.now().uptimeNanoseconds / period + 1) * period
        timer.schedule(deadline: DispatchTime(uptimeNanoseconds: first),
                       repeating: .milliseconds(RoomCore.tickMilliseconds), leeway: .milliseconds(1))
        timer.setEventHandler { [weak self, executor] in
            executor.counted { self?.assumeIsolated { $0.runTicks() } }
        }
        timer.resume()
        self.timer = timer
    }

    private func stopTimer() {
        timer?.cancel()
        timer = nil
    }

    private func stopTicker() {
        guard let ticker else { return }
        media?.ticks?.remove(ticker)
        self.ticker = nil
    }

    /// One firing (of the timer or the tick source): the core's tick at the clock's `now`.
    func runTicks() {
        core.tick(now: clock.now(), into: &output)
        carryOut()
        let small = connections.count < Self.inlineDatagramLimit
        // The room may have grown past (or shrunk below) the size its driver is for.
        if (ticker != nil) != ticksFromSource { startTicksIfNeeded() }
        inlineUntil.store(inlineLimit(small: small), ordering: .relaxed)
    }

    /// Until when the reader may run this room's datagrams on its own thread. A timer's firing
    /// waits on the queue unseen by `SerialQueueExecutor.isIdle`, so a timer-driven room stops
    /// a guard before its next tick; a tick the reader hands over is counted there, and the
    /// reader fires the ticks itself after its reads, so a room it ticks has no such limit.
    private func inlineLimit(small: Bool) -> UInt64 {
        guard small else { return 0 }
        if ticker != nil { return .max }
        let next = core.nextTickAt?.nanoseconds ?? 0
        return next > Self.inlineGuardNanoseconds ? next - Self.inlineGuardNanoseconds : 0
    }
}

/// A tick source's handle on one room (`TickReceiver`): runs the room's tick on the source's
/// thread (`queue.sync`, which libdispatch runs on the calling thread) when the source has time
/// and the room's queue is idle, else hands it to the queue, once: a tick already waiting there
/// is not queued again (the tick grid catches up whatever a late firing missed).
/// `@unchecked Sendable`: `room` is a weak reference read only to capture it, the executor is
/// immutable, and `waiting` is atomic; the tick itself runs on the room's queue.
final class RoomTicker: TickReceiver, @unchecked Sendable {
    private weak var room: Room?
    private let executor: SerialQueueExecutor
    private let waiting = Atomic<Bool>(false)

    init(room: Room) {
        self.room = room
        executor = room.executor
    }

    func fire(mayRunInline: Bool) -> Bool {
        guard let room else { return false }
        if mayRunInline, executor.isIdle {
            executor.queue.sync {
                executor.counted { room.assumeIsolated { $0.runTicks() } }
            }
        } else if !waiting.exchange(true, ordering: .acquiringAndReleasing) {
            executor.async { [weak room, self] in
                waiting.store(false, ordering: .releasing)
                room?.assumeIsolated { $0.runTicks() }
            }
        }
        return true
    }
}
