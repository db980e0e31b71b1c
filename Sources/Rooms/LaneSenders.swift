import ChorusCore
import Dispatch
import Metrics
import Synchronization

/// Sends a big room's lane batches (`RoomCore+Lanes`, `RoomOutput.laneTransmits`) off the
/// room's thread, one serial queue per lane, and returns at once.
///
/// Why: the batches are finished datagrams (protected, addressed, owned arrays), so sending
/// them shares nothing with the room. Sent inside a fork-join, the room's thread took one
/// lane's `sendmmsg` itself and waited for the others: a quarter of its time in a room of
/// 2,500, and the room is one thread of control, so every tick, every inbound packet and every
/// join waited behind the kernel's send path. Now the next step can start while the lanes
/// send.
///
/// Order: one lane's batches leave in the order they were handed over (a serial queue). A
/// listener stays on its lane while the room's membership and speakers stay the same; when a
/// slice boundary moves (a join, a leave, a talker becoming a listener) one of its packets may
/// overtake the previous one by a lane's backlog, which its jitter buffer reorders by sequence
/// number.
///
/// Real time: a lane with `maximumPending` batches not yet sent drops the next one (counted in
/// `chorus_media_dropped_total{reason="lane_backlog"}`) instead of queueing late media.
///
/// Immutable lanes, each an atomic counter and a queue: `Sendable`.
final class LaneSenders: Sendable {
    /// Batches (ticks) one lane may hold unsent: 80 ms of audio.
    static let maximumPending = 4

    private final class Lane: Sendable {
        let queue: DispatchQueue
        let pending = Atomic<Int>(0)

        init(label: String) {
            queue = DispatchQueue(label: label, qos: .userInitiated)
        }
    }

    private let lanes: [Lane]

    init(lanes count: Int, label: String) {
        lanes = (0..<max(1, count)).map { Lane(label: "\(label).lane\($0)") }
    }

    var count: Int { lanes.count }

    /// Queues `batch` on lane `lane` (sent on the calling thread when there is no such lane).
    /// Returns false when the lane's backlog was full and the batch was dropped.
    @discardableResult
    func send(_ batch: [Transmit], lane: Int, sink: any DatagramSink) -> Bool {
        guard lanes.indices.contains(lane) else {
            sink.send(batch: batch)
            return true
        }
        let target = lanes[lane]
        guard target.pending.wrappingAdd(1, ordering: .relaxed).newValue <= Self.maximumPending else {
            target.pending.wrappingSubtract(1, ordering: .relaxed)
            Counter(label: "chorus_media_dropped_total", dimensions: [("reason", "lane_backlog")])
                .increment(by: batch.count)
            return false
        }
        target.queue.async {
            sink.send(batch: batch)
            target.pending.wrappingSubtract(1, ordering: .relaxed)
        }
        return true
    }

    /// Waits until every batch handed over so far has been sent (tests, and a closing room).
    func drain() {
        for lane in lanes { lane.queue.sync {} }
    }
}
