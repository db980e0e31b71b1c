/// A room whose 20 ms tick is fired by a thread that is awake on the tick grid anyway (the
/// media port's reader, right after its read before each tick), instead of by a timer of its
/// own. A timer's firing wakes Dispatch's timer thread and then a worker thread for every tick
/// of every room: in a quiet room of 40, two wake-ups every 20 ms on top of the reader's one.
/// Implemented by the room side; registered with a `TickSource`.
public protocol TickReceiver: AnyObject, Sendable {
    /// One firing, on the source's thread. `mayRunInline`: the source has time for this tick on
    /// its own thread; otherwise the receiver only hands the tick over (to its room's queue).
    /// Returns false once the receiver's room is gone: the source then drops it.
    func fire(mayRunInline: Bool) -> Bool
}

/// Where rooms register their tick (`TickReceiver`): fired once per 20 ms grid point, shortly
/// before it. Callable from any thread.
public protocol TickSource: AnyObject, Sendable {
    func add(_ receiver: any TickReceiver)
    func remove(_ receiver: any TickReceiver)
}
