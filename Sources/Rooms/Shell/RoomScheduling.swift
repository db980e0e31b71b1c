import ChorusCore

/// The room shell's scheduling policy, as a pure value: who fires a room's 20 ms ticks, until
/// when the socket's reader may run a room's datagrams on its own thread, and what a tick
/// source's firing does. The shell (`Room+Ticks`, `ParticipantConnection`, `RoomTicker`) feeds
/// it the facts — the room's size, whether the process has a tick source, the grid's next tick,
/// whether the room's queue is idle, the time on the room's clock — and does what it says; its
/// tests give it those facts directly, on a fake clock, with no thread and no sleep.
///
/// Why these rules:
/// - A room of fewer than `inlineDatagramLimit` members ticks from the media reader's wake-up
///   (`TickList`, a `TickSource`): one wake-up of one thread then reads and ticks a small
///   server's rooms. A bigger room, or one without a source (unit tests), has a timer on its
///   queue: its ticks take a millisecond or more, which the reader must not wait behind.
/// - The reader runs a light read's datagrams itself (`queue.sync` on an idle queue) only
///   until a little before the room's next tick when a timer drives the room: from then on the
///   timer's firing is pending on the queue, unseen by the idle count, and the reader would wait
///   behind it (and behind every other room's tick). A room the reader ticks itself has no such
///   limit. DTLS always hops: a handshake's signing takes a millisecond.
/// - A tick source's firing runs the tick on the source's thread when it may and the queue is
///   idle; otherwise it hands the tick to the queue once: a tick already waiting there is not
///   queued again (the tick grid catches up what a late firing missed).
public struct RoomScheduling: Sendable, Equatable {
    /// A room this big has ticks of a millisecond or more, which the reader would wait behind.
    public static let inlineDatagramLimit = 100
    /// How long before its next tick's grid time a timer-driven room stops taking datagrams
    /// inline: Dispatch fires the timers up to a millisecond early or late (leeway), on one
    /// grid for all rooms.
    public static let inlineGuardNanoseconds: UInt64 = 2_000_000

    /// What fires a room's ticks.
    public enum TickDriver: Sendable, Equatable {
        /// The process's tick source (the media reader, after its read before each tick).
        case tickSource
        /// A timer on the room's own queue, on the process-wide 20 ms grid.
        case timer
        /// Nothing: the room has nothing to tick for.
        case none
    }

    /// The driver a room needs now.
    public static func tickDriver(needsTicks: Bool, hasTickSource: Bool, members: Int) -> TickDriver {
        guard needsTicks else { return .none }
        return hasTickSource && members < inlineDatagramLimit ? .tickSource : .timer
    }

    /// Until when (the room clock's nanoseconds) the reader may run the room's datagrams on its
    /// own thread, as set after each tick: never for a big room, always while the source fires
    /// the room's ticks, else until the guard before the next grid tick.
    public static func inlineUntil(members: Int, driver: TickDriver, nextTick: MediaTime?) -> UInt64 {
        guard members < inlineDatagramLimit else { return 0 }
        if driver == .tickSource { return .max }
        let next = nextTick?.nanoseconds ?? 0
        return next > inlineGuardNanoseconds ? next - inlineGuardNanoseconds : 0
    }

    /// What happens to one read's datagrams for a room.
    public enum DatagramHandling: Sendable, Equatable {
        /// Run on the reader's thread (the room's queue is idle: `queue.sync` runs there).
        case inline
        /// Handed to the room's queue in one block.
        case hop
    }

    public static func datagramHandling(readerIsLight: Bool, now: MediaTime, inlineUntil: UInt64, queueIdle: Bool,
                                        carriesDTLS: Bool) -> DatagramHandling {
        readerIsLight && now.nanoseconds < inlineUntil && queueIdle && !carriesDTLS ? .inline : .hop
    }

    /// What one firing of the tick source does for a room.
    public enum Firing: Sendable, Equatable {
        /// Run the tick on the source's thread, now.
        case inline
        /// Hand the tick to the room's queue.
        case enqueue
        /// Nothing: a tick handed over before is still waiting on the queue.
        case alreadyWaiting
    }

    public static func firing(mayRunInline: Bool, queueIdle: Bool, tickWaiting: Bool) -> Firing {
        if mayRunInline, queueIdle { return .inline }
        return tickWaiting ? .alreadyWaiting : .enqueue
    }
}
