import ChorusCore
import Synchronization

/// The rooms whose ticks the media port's reader fires (`TickReceiver`), once per 20 ms grid
/// point right after its read before the tick (`ReadSchedule.lead`). Rooms add and remove
/// themselves from their queues; the reader takes a copy of the list only when it changed.
///
/// Driven by `add`/`remove` (any thread), `TickFiring` (the reader thread) and the
/// waker the reader installs, which ends the reader's wait so a room's first tick is on time.
public final class TickList: TickSource {
    private let receivers = Mutex<[ObjectIdentifier: any TickReceiver]>([:])
    private let generation = Atomic<Int>(0)
    private let waker = Mutex<(@Sendable () -> Void)?>(nil)

    public init() {}

    public func add(_ receiver: any TickReceiver) {
        receivers.withLock { $0[ObjectIdentifier(receiver)] = receiver }
        _ = generation.wrappingAdd(1, ordering: .releasing)
        waker.withLock { $0 }?()
    }

    public func remove(_ receiver: any TickReceiver) {
        guard receivers.withLock({ $0.removeValue(forKey: ObjectIdentifier(receiver)) }) != nil else { return }
        _ = generation.wrappingAdd(1, ordering: .releasing)
    }

    /// How many rooms are ticked.
    public var count: Int { receivers.withLock { $0.count } }

    /// What the reader calls to be woken when a receiver is added.
    func setWaker(_ wake: (@Sendable () -> Void)?) { waker.withLock { $0 = wake } }

    /// The receivers now, into `copy` when the list changed since `seen` (the reader's copy).
    func refresh(_ copy: inout [any TickReceiver], seen: inout Int) {
        let current = generation.load(ordering: .acquiring)
        guard current != seen else { return }
        seen = current
        copy = receivers.withLock { Array($0.values) }
    }
}

/// The reader's side of a `TickList`: when the next firing is due and the firing itself. A
/// value the reader thread owns.
struct TickFiring {
    /// How long the reader may run ticks on its own thread after a grid point's firing began;
    /// later ticks of that firing go to their rooms' queues. The reader serves every room's
    /// datagrams, so a server of many small rooms must not have them all tick on one thread.
    static let inlineBudget: UInt64 = 3_000_000

    let list: TickList
    private var receivers: [any TickReceiver] = []
    private var seen = -1
    /// The next firing point (monotonic ns): `ReadSchedule.lead` before a grid point.
    private(set) var next: UInt64 = 0

    init(list: TickList) { self.list = list }

    /// Whether any room is ticked, after taking the list's changes.
    mutating func isActive() -> Bool {
        list.refresh(&receivers, seen: &seen)
        return !receivers.isEmpty
    }

    /// Fires every receiver when a firing point has come (`now` at or past `next`): on this
    /// thread while within `inlineBudget` of the firing's start, handed over after that.
    mutating func fireIfDue(now: UInt64, clock: () -> UInt64) {
        guard now >= next, isActive() else { return }
        next = ReadSchedule.readPoint(after: now)
        var gone: [any TickReceiver] = []
        for receiver in receivers where !receiver.fire(mayRunInline: clock() &- now < Self.inlineBudget) {
            gone.append(receiver)
        }
        for receiver in gone { list.remove(receiver) }
    }
}
