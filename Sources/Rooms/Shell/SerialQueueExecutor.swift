import Dispatch
import Synchronization

/// Runs an actor's jobs on one serial `DispatchQueue`. Linux has no `DispatchSerialQueue`, and a
/// plain `DispatchQueue` is not a `SerialExecutor`, so each Room gets this small adapter. The
/// room's media timer (a `DispatchSourceTimer` on the same queue) can then enter the actor with
/// `assumeIsolated` and no hop: one thread of control per room, no locks on the media path.
///
/// `@unchecked Sendable`: its stored properties are an immutable queue reference (queues are
/// thread-safe) and an atomic counter; it holds no other state.
public final class SerialQueueExecutor: SerialExecutor, @unchecked Sendable {
    /// The queue every job of the owning actor runs on. Immutable after init.
    public let queue: DispatchQueue

    /// The queue targets the global non-overcommit queue: at most one worker thread per core
    /// runs rooms, and a worker that finishes one room's work goes on with the next room's
    /// without parking. A default queue targets the overcommit pool, which wakes a thread for
    /// each queue with work: measured as a third of a small meeting's CPU in thread wake-ups.
    /// Nothing a room runs blocks, so the bounded pool cannot starve.
    public init(label: String) {
        queue = DispatchQueue(label: label, target: .global(qos: .userInteractive))
    }

    /// Blocks handed to `queue` through `async` (actor jobs, datagram hops) or running in
    /// `counted` (timer firings) and not yet finished. Zero means the queue is idle, so a caller
    /// may run a short block on it synchronously without waiting (`ParticipantConnection`).
    private let activity = Atomic<Int>(0)

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        async {
            unowned.runSynchronously(on: self.asUnownedSerialExecutor())
        }
    }

    /// Runs `body` on the queue, counted in `isIdle`.
    public func async(_ body: @escaping @Sendable () -> Void) {
        _ = activity.wrappingAdd(1, ordering: .relaxed)
        queue.async {
            body()
            _ = self.activity.wrappingSubtract(1, ordering: .relaxed)
        }
    }

    /// Runs `body` (already on the queue, e.g. a timer's handler), counted in `isIdle`.
    public func counted(_ body: () -> Void) {
        _ = activity.wrappingAdd(1, ordering: .relaxed)
        body()
        _ = activity.wrappingSubtract(1, ordering: .relaxed)
    }

    /// Nothing is queued or running on the queue through this executor (a hint: it may change
    /// at once).
    public var isIdle: Bool { activity.load(ordering: .relaxed) == 0 }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func checkIsolated() {
        dispatchPrecondition(condition: .onQueue(queue))
    }
}
