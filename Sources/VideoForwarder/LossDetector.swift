import ChorusCore

/// Finds the packets a publisher sent that never reached the server, and says when to NACK
/// them (RFC 4585 generic NACK): at the next poll after the gap shows (a tick later, which
/// also absorbs reordering), then again every `retryInterval`, at most `maximumAttempts`
/// times, and never after `maximumAge`. Bounded: at most `capacity` missing packets are
/// tracked; a jump larger than that is a restart, not loss.
///
/// Driven by the room: `received` for each packet of the publisher's camera SSRC, `due(now:)`
/// on the tick, which returns the sequence numbers to NACK now.
public struct LossDetector: Sendable {
    struct Missing: Sendable {
        var sequence: UInt64
        var since: MediaTime
        var nextAt: MediaTime
        var attempts: Int
    }

    public var retryInterval: UInt64 = 100_000_000
    public var maximumAttempts = 3
    public var maximumAge: UInt64 = 1_000_000_000
    public let capacity = 256
    private var unwrapper = SequenceNumberUnwrapper()
    private var highest: UInt64?
    private var missing: [Missing] = []
    /// Packets that arrived after being NACKed (recovered by a retransmission).
    public private(set) var recovered = 0

    public init() {}

    public mutating func received(_ sequenceNumber: UInt16, now: MediaTime) {
        let extended = unwrapper.unwrap(sequenceNumber)
        guard let last = highest else {
            highest = extended
            return
        }
        if extended > last {
            let gap = extended - last - 1
            if gap > UInt64(capacity) {
                missing.removeAll()  // a restart or a long outage: nothing worth repairing
            } else if gap > 0 {
                for lost in (last + 1)..<extended {
                    missing.append(Missing(sequence: lost, since: now, nextAt: now, attempts: 0))
                }
                if missing.count > capacity { missing.removeFirst(missing.count - capacity) }
            }
            highest = extended
        } else if let index = missing.firstIndex(where: { $0.sequence == extended }) {
            if missing[index].attempts > 0 { recovered += 1 }
            missing.remove(at: index)
        }
    }

    /// The sequence numbers to NACK now.
    public mutating func due(now: MediaTime) -> [UInt16] {
        guard !missing.isEmpty else { return [] }
        var result: [UInt16] = []
        missing.removeAll { entry in
            now.nanoseconds(since: entry.since) > maximumAge || entry.attempts >= maximumAttempts
        }
        for index in missing.indices where missing[index].nextAt <= now {
            missing[index].attempts += 1
            missing[index].nextAt = now.adding(nanoseconds: retryInterval)
            result.append(UInt16(truncatingIfNeeded: missing[index].sequence))
        }
        return result
    }
}
