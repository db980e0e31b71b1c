import ChorusCore

/// Spreads the video forwarded to one subscriber over time, at a little more than its video
/// budget, so that a burst — a keyframe after a layer switch is tens of kilobytes in a few
/// milliseconds — reaches its link no faster than the link drains it. Unpaced, such a burst
/// overflows a thin access link's queue: a 300 kbit/s token-bucket link with 300 ms of queue
/// (11 KB) dropped 2.3 % of a viewer's video over the five seconds around a 180p → 360p switch
/// (test_simulcast_layers, 2026-12-07). libwebrtc's senders and mediasoup pace for the same
/// reason.
///
/// A token bucket: `rate` bits a second (the subscriber's measured video budget ×
/// `budgetFactor`; nil: not paced, for a subscriber known only by its REMB, which measures what
/// it receives rather than what its link carries), at most one tick's worth of credit saved,
/// packets sent while the credit lasts and queued after it, in order. The queue is released as
/// credit comes back, on the router's 20 ms tick and whenever a packet arrives; it holds at most
/// `maximumQueueNanoseconds` at the rate (libwebrtc's pacer expects at most 2 s of queue too: a
/// 360p keyframe toward a 300 kbit/s link is most of a second), beyond which the oldest
/// packets are dropped and counted (the subscriber asks for a keyframe; the layer choice moves
/// down). Retransmissions
/// and probes do not wait in it (they spend credit), and nothing is paced before the first
/// budget is known.
///
/// A value owned by the subscriber's `VideoMember`, driven by the router with the time.
struct VideoPacer {
    /// Pacing rate over the video budget: the budget leaves the audio's share out, and the
    /// link's own queue absorbs the rest (at 1.25, a 25 KB keyframe toward a 300 kbit/s link
    /// adds at most ~5 KB to its queue).
    static let budgetFactor = 1.25
    static let maximumQueueNanoseconds: UInt64 = 2_000_000_000
    /// Credit saved at most: one room tick's worth, so a tick's release is never a burst.
    static let creditNanoseconds: UInt64 = 20_000_000

    /// Bits a second; nil: not paced.
    private(set) var rate: Int?
    /// Bytes that may go now (negative: spent ahead by a packet that went on credit).
    private var credit = 0.0
    private var refilledAt: MediaTime?
    /// Packets waiting, oldest first (from `head`).
    private var queue: [[UInt8]] = []
    private var head = 0
    private var queuedBytes = 0
    /// Packets dropped because the queue was full.
    private(set) var dropped: UInt64 = 0

    var isEmpty: Bool { head == queue.count }

    /// Sets the rate from the subscriber's measured video budget (nil: stop pacing; what waits
    /// is handed back to be sent at once).
    mutating func setBudget(_ measuredVideoBudget: Int?, now: MediaTime) -> [[UInt8]] {
        guard let budget = measuredVideoBudget else {
            rate = nil
            return drain()
        }
        refill(now: now)
        rate = max(Int(Double(budget) * Self.budgetFactor), 64_000)
        return []
    }

    /// Whether a packet of `bytes` may go now; if not, the caller queues it (`enqueue`). A
    /// packet may go on credit when nothing waits and some credit is left.
    mutating func admit(bytes: Int, now: MediaTime) -> Bool {
        guard rate != nil else { return true }
        refill(now: now)
        guard isEmpty, credit > 0 else { return false }
        credit -= Double(bytes)
        return true
    }

    /// Spends credit for a packet that does not wait (a retransmission).
    mutating func spend(bytes: Int, now: MediaTime) {
        guard rate != nil else { return }
        refill(now: now)
        credit -= Double(bytes)
    }

    /// Queues a packet; the oldest ones go (counted) while the queue holds more than its bound.
    mutating func enqueue(_ packet: [UInt8]) {
        queue.append(packet)
        queuedBytes += packet.count
        let limit = Double(rate ?? 0) / 8 * Double(Self.maximumQueueNanoseconds) / 1e9
        while queuedBytes > Int(limit), !isEmpty {
            queuedBytes -= queue[head].count
            queue[head] = []
            head += 1
            dropped &+= 1
        }
        compact()
    }

    /// The packets whose credit has come, in order.
    mutating func release(now: MediaTime) -> [[UInt8]] {
        guard !isEmpty else { return [] }
        refill(now: now)
        var released: [[UInt8]] = []
        while !isEmpty, credit > 0 {
            let packet = queue[head]
            queue[head] = []
            head += 1
            queuedBytes -= packet.count
            credit -= Double(packet.count)
            released.append(packet)
        }
        compact()
        return released
    }

    private mutating func refill(now: MediaTime) {
        defer { refilledAt = now }
        guard let rate, let last = refilledAt, now > last else { return }
        let bytesPerSecond = Double(rate) / 8
        let cap = bytesPerSecond * Double(Self.creditNanoseconds) / 1e9
        credit = min(credit + bytesPerSecond * Double(now.nanoseconds(since: last)) / 1e9, cap)
    }

    private mutating func drain() -> [[UInt8]] {
        let waiting = Array(queue[head...])
        queue.removeAll(keepingCapacity: true)
        head = 0
        queuedBytes = 0
        return waiting
    }

    /// Drops the sent packets' places once they are half the array.
    private mutating func compact() {
        guard head > 0, head * 2 >= queue.count else { return }
        queue.removeFirst(head)
        head = 0
    }
}
