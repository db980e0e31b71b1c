import ChorusCore
import Dispatch

/// Sends a big room's lane batches (`AudioStage+Lanes`, `RoomOutput.laneTransmits`) off the
/// room's thread, one serial queue per lane, and returns at once.
///
/// Why: the batches are finished datagrams (protected, addressed, owned arrays), so sending
/// them shares nothing with the room. Sent inside a fork-join, the room's thread took one
/// lane's `sendmmsg` itself and waited for the others: a quarter of its time in a room of
/// 2,500, and the room is one thread of control, so every tick, every inbound packet and every
/// join waited behind the kernel's send path. Now the next step can start while the lanes
/// send.
///
/// Bound: the room calls `drain()` before it hands over a step's batches, so at most one step
/// is in flight and no queue of late audio can build in the lanes.
///
/// Order: one lane's batches leave in the order they were handed over (a serial queue). A
/// listener stays on its lane while the room's membership and speakers stay the same; when a
/// slice boundary moves (a join, a leave, a talker becoming a listener) one of its packets may
/// overtake the previous one, which its jitter buffer reorders by sequence number.
///
/// Immutable (its queues): `Sendable`.
final class LaneSenders: Sendable {
    private let queues: [DispatchQueue]

    init(lanes count: Int, label: String) {
        queues = (0..<max(1, count)).map { DispatchQueue(label: "\(label).lane\($0)", qos: .userInitiated) }
    }

    /// Queues `batch` on lane `lane` (sent on the calling thread when there is no such lane).
    func send(_ batch: [Transmit], lane: Int, sink: any DatagramSink) {
        guard queues.indices.contains(lane) else {
            sink.send(batch: batch)
            return
        }
        queues[lane].async { sink.send(batch: batch) }
    }

    /// Waits until every batch handed over so far has been sent.
    func drain() {
        for queue in queues { queue.sync {} }
    }
}

/// Runs a big room's lanes on the process's threads (`DispatchQueue.concurrentPerform`: the
/// calling thread takes one lane and waits for the others): the shell's `LaneRunner`.
public struct ConcurrentLanes: LaneRunner {
    public init() {}

    public func run(lanes: Int, _ work: @Sendable (Int) -> Void) {
        DispatchQueue.concurrentPerform(iterations: lanes, execute: work)
    }
}
