/// Storage for `AdaptiveJitterBuffer`: a fixed ring of slots indexed by extended sequence number
/// modulo its capacity. Every packet the buffer holds has a sequence number in
/// `[nextSequence, nextSequence + capacity)`, so slots never collide; a slot also remembers the
/// packet it last held after it was played, which is how a duplicate is told from a late packet.
///
/// Payload arrays are stored as given (no copy) and handed back out the same way, so the ring
/// allocates only at creation.
struct JitterPacketRing: Sendable {
    /// One stored packet. `timestamp` is the extended RTP timestamp; `samples` is 0 if unknown.
    struct Slot: Sendable {
        /// Never used; holding a packet; played or dropped (remembered for duplicates).
        enum State: Sendable { case empty, buffered, consumed }
        var sequence: UInt64 = .max
        var state: State = .empty
        var timestamp: Int64 = 0
        var samples = 0
        var marker = false
        var arrival: Int64 = 0
        var payload: [UInt8] = []
    }

    private var slots: [Slot]
    private let mask: UInt64
    /// Packets in state `.buffered`.
    private(set) var count = 0
    /// Highest sequence number ever stored since the last flush.
    private(set) var highest: UInt64?

    var capacity: Int { slots.count }

    /// `capacity` is rounded up to a power of two, at least 16.
    init(capacity: Int) {
        var size = 16
        while size < capacity, size < 1 << 14 { size <<= 1 }
        slots = [Slot](repeating: Slot(), count: size)
        mask = UInt64(size - 1)
    }

    private func index(_ sequence: UInt64) -> Int { Int(truncatingIfNeeded: sequence & mask) }

    /// The buffered packet with this sequence number, if any.
    func buffered(_ sequence: UInt64) -> Slot? {
        let slot = slots[index(sequence)]
        return slot.sequence == sequence && slot.state == .buffered ? slot : nil
    }

    /// Whether this sequence number was stored at some point and is still remembered.
    func wasSeen(_ sequence: UInt64) -> Bool {
        let slot = slots[index(sequence)]
        return slot.sequence == sequence && slot.state != .empty
    }

    /// Stores a packet, replacing whatever older packet the slot remembered.
    mutating func store(_ slot: Slot) {
        let position = index(slot.sequence)
        if slots[position].state == .buffered { count -= 1 }
        slots[position] = slot
        slots[position].state = .buffered
        count += 1
        if highest.map({ slot.sequence > $0 }) ?? true { highest = slot.sequence }
    }

    /// Takes the packet out (played, dropped or late-discarded) and returns it; the slot keeps
    /// its sequence number as `.consumed` so a retransmitted copy is recognized as a duplicate.
    mutating func consume(_ sequence: UInt64) -> Slot? {
        let position = index(sequence)
        guard slots[position].sequence == sequence, slots[position].state == .buffered else { return nil }
        var slot = slots[position]
        slots[position].state = .consumed
        slots[position].payload = []
        count -= 1
        slot.state = .consumed
        return slot
    }

    /// Marks a sequence number as handled without a payload (e.g. a late arrival), for
    /// duplicate detection. Never evicts a buffered packet that shares the slot.
    mutating func remember(_ sequence: UInt64) {
        let position = index(sequence)
        guard slots[position].state != .buffered else { return }
        slots[position] = Slot(sequence: sequence, state: .consumed)
    }

    /// Lowest buffered sequence number at or after `sequence`, scanning at most one capacity.
    func firstBuffered(from sequence: UInt64) -> UInt64? {
        guard count > 0, let highest, highest >= sequence else { return nil }
        let end = min(highest, sequence &+ mask)
        var candidate = sequence
        while candidate <= end {
            let position = index(candidate)
            if slots[position].sequence == candidate && slots[position].state == .buffered { return candidate }
            candidate += 1
        }
        return nil
    }

    /// Lowest buffered sequence number overall (scans the whole ring; not for the hot path).
    func lowestBuffered() -> UInt64? {
        guard count > 0 else { return nil }
        var lowest: UInt64?
        for slot in slots where slot.state == .buffered {
            if lowest.map({ slot.sequence < $0 }) ?? true { lowest = slot.sequence }
        }
        return lowest
    }

    /// Drops every buffered packet; returns how many there were.
    @discardableResult
    mutating func flush() -> Int {
        let dropped = count
        for position in slots.indices {
            slots[position] = Slot()
        }
        count = 0
        highest = nil
        return dropped
    }
}
