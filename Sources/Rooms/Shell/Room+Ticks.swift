import ChorusCore
import Dispatch
import Synchronization

extension Room {
    /// Starts the room's ticks when it has something to tick for, or moves them to the driver
    /// `RoomScheduling` says its size calls for: the media environment's `TickSource` (the
    /// port's reader, right after its read before each tick: no wake-up of its own) for a small
    /// room, else a timer on its queue. A room on the border may briefly have both: the tick
    /// grid runs each tick once.
    func startTicksIfNeeded() {
        switch tickDriver {
        case .none:
            return
        case .tickSource:
            if ticker == nil, let source = media?.ticks {
                let ticker = RoomTicker(room: self)
                self.ticker = ticker
                source.add(ticker)
            }
            stopTimer()
        case .timer:
            if timer == nil { startTimer() }
            stopTicker()
        }
    }

    /// The driver the room needs now.
    var tickDriver: RoomScheduling.TickDriver {
        RoomScheduling.tickDriver(needsTicks: core.needsTicks, hasTickSource: media?.ticks != nil,
                                  members: connections.count)
    }

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
        let members = connections.count
        // The room may have grown past (or shrunk below) the size its driver is for.
        let driver = tickDriver
        if driver != .none, (ticker != nil) != (driver == .tickSource) { startTicksIfNeeded() }
        let running: RoomScheduling.TickDriver = ticker != nil ? .tickSource : .timer
        inlineUntil.store(RoomScheduling.inlineUntil(members: members, driver: running, nextTick: core.nextTickAt),
                          ordering: .relaxed)
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
        switch RoomScheduling.firing(mayRunInline: mayRunInline, queueIdle: executor.isIdle,
                                     tickWaiting: waiting.load(ordering: .acquiring)) {
        case .inline:
            executor.queue.sync {
                executor.counted { room.assumeIsolated { $0.runTicks() } }
            }
        case .enqueue:
            // The exchange settles a race with another firing: only one tick waits.
            guard !waiting.exchange(true, ordering: .acquiringAndReleasing) else { return true }
            executor.async { [weak room, self] in
                waiting.store(false, ordering: .releasing)
                room?.assumeIsolated { $0.runTicks() }
            }
        case .alreadyWaiting:
            break
        }
        return true
    }
}
