import ChorusCore

/// Keeps a subscriber's retransmissions (answers to its NACKs) from making its congestion
/// worse: a lossy link sends more NACKs, and answering all of them at once adds load exactly
/// where the link is already short (measured here: a viewer behind 300 kbit/s, its NACKs
/// answered in full, received 1.6 Mbit/s for half a second). Two rules, as senders do:
/// - the same packet of the same slot is sent again at most once per `repeatNanoseconds`
///   (about a round trip: a second NACK before then asks for the copy already on its way);
/// - retransmissions may use `shareOfBudget` of the subscriber's downlink estimate, from a
///   token bucket holding a quarter second of that rate (no limit while nothing is known).
///
/// Sans-IO: the room asks `allow(slot:sequenceNumber:bytes:budget:now:)` before each answer.
public struct RetransmissionLimiter: Sendable {
    public static let repeatNanoseconds: UInt64 = 100_000_000
    public static let shareOfBudget = 0.25
    static let ringSize = 256

    /// Recently answered (slot, sequence number) pairs and when, by a hash of the pair.
    private var recent: [(slot: Int, sequenceNumber: UInt16, at: MediaTime)?]
    private var tokens: Double = 0
    private var refilledAt: MediaTime?
    public private(set) var refused: UInt64 = 0

    public init() {
        recent = Array(repeating: nil, count: Self.ringSize)
    }

    /// Whether to answer a NACK for `sequenceNumber` of `slot` with `bytes` now, given the
    /// subscriber's downlink estimate in bit/s (nil: not known); counts the answer if so.
    public mutating func allow(slot: Int, sequenceNumber: UInt16, bytes: Int, budget: Int?, now: MediaTime) -> Bool {
        let index = (Int(sequenceNumber) &+ slot &* 131) & (Self.ringSize - 1)
        if let last = recent[index], last.slot == slot, last.sequenceNumber == sequenceNumber,
           now.nanoseconds(since: last.at) < Self.repeatNanoseconds {
            refused &+= 1
            return false
        }
        if let budget {
            let rate = Double(max(budget, 0)) * Self.shareOfBudget / 8  // bytes per second
            let capacity = max(rate / 4, 1_500)
            let elapsed = refilledAt.map { Double(now.nanoseconds(since: $0)) / 1e9 } ?? 1
            tokens = min(capacity, tokens + rate * elapsed)
            refilledAt = now
            guard tokens >= Double(bytes) else {
                refused &+= 1
                return false
            }
            tokens -= Double(bytes)
        }
        recent[index] = (slot, sequenceNumber, now)
        return true
    }
}
