import Synchronization

/// The runtime check of a class that is `@unchecked Sendable` because it has one user at a time
/// (a room's queue, the load generator's event loop), not because it is thread-safe: typically
/// an owner of C state (`OpaquePointer` is not Sendable). Each checked call marks the object busy
/// with one atomic compare-exchange and traps if it already was, so two threads inside it at
/// once (the violation the `@unchecked` hides from the compiler, and one ThreadSanitizer cannot
/// see inside an uninstrumented C library) stops the process at the second call instead of
/// corrupting the C state. Two uncontended atomic operations per call, a few nanoseconds.
///
/// Only the outermost entry points run checked: a checked call that calls another checked call
/// of the same object traps.
public struct ExclusiveUseCheck: ~Copyable, Sendable {
    private let busy = Atomic<Bool>(false)

    public init() {}

    /// Runs `body` with the object marked busy; `what` names the object in the trap message.
    public func run<Result, Failure: Error>(
        _ what: StaticString, _ body: () throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let (entered, _) = busy.compareExchange(expected: false, desired: true, ordering: .acquiring)
        precondition(entered, "\(what) used from two threads at once: its one-user-at-a-time contract is broken")
        defer { busy.store(false, ordering: .releasing) }
        return try body()
    }
}
