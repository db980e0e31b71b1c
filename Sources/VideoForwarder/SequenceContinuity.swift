/// Keeps a forwarded counter continuous when some of its values are dropped on purpose: the
/// RTP sequence numbers of the packets a slot leaves out, or the VP8 picture IDs of the frames
/// of a temporal layer it does not forward (the part mediasoup's SeqManager plays). Works on
/// extended (unwrapped, `WrappingCounterUnwrapper`) values: a value's output is the value less
/// the number of values dropped before it, so the forwarded values keep their order and the
/// receiver sees no gap where a value was left out.
///
/// Reordering: a value older than the newest one seen is given the output that was kept free
/// for it when newer values went out, its offset counted from the drops newer than it (a ring
/// of the recent drops, in ascending order). What cannot be undone:
/// - a value dropped after a newer value was forwarded: its output was already skipped over,
///   so `drop` reports it late (false) and the receiver sees one missing value, as it would
///   from mediasoup;
/// - a value older than the oldest drop the ring still holds: how many drops lie above it is
///   no longer known, so it gets no output (nil) and is not forwarded.
///
/// Fixed memory: the ring is allocated once, at `init`; `drop` and `offset` never allocate, and
/// an old value costs a binary search of the ring.
public struct SequenceContinuity: Sendable {
    /// The values dropped since `reset`, newest last, in a ring: `ring[(first + i) % capacity]`.
    private var ring: [UInt64]
    private var first = 0
    private var count = 0
    /// Values dropped since `reset` (the ring holds the newest of them).
    public private(set) var dropped: UInt64 = 0
    /// The newest value seen (forwarded or dropped), nil before the first.
    public private(set) var newest: UInt64?
    /// Values below this may have had drops above them evicted from the ring.
    private var oldestKnown: UInt64 = 0

    /// `capacity`: how many recent drops are remembered for reordered values (at least 1).
    public init(capacity: Int = 128) {
        ring = Array(repeating: 0, count: max(capacity, 1))
    }

    /// Forgets everything: the next value starts a new stream (a slot switch).
    public mutating func reset() {
        (first, count, dropped, newest, oldestKnown) = (0, 0, 0, nil, 0)
    }

    /// Leaves `value` out of the output. Returns false when that comes too late (a newer value
    /// was already forwarded and `value` was not dropped before), true otherwise, including for
    /// a value dropped already (every packet of a dropped frame drops its picture ID again).
    @discardableResult
    public mutating func drop(_ value: UInt64) -> Bool {
        if let newest, value <= newest { return contains(value) }
        if count == ring.count {
            oldestKnown = ring[first] &+ 1
            first = (first + 1) % ring.count
            count -= 1
        }
        ring[(first + count) % ring.count] = value
        count += 1
        newest = value
        dropped &+= 1
        return true
    }

    /// What to subtract from `value` for its output: the drops before it. Nil when `value` was
    /// dropped, or is too old for the ring to tell.
    public mutating func offset(of value: UInt64) -> UInt64? {
        guard let newest, value <= newest else {
            newest = value
            return dropped
        }
        guard value >= oldestKnown, !contains(value) else { return nil }
        return dropped &- UInt64(count - firstIndex(above: value))
    }

    /// The ring position of the first drop greater than `value` (`count` when none is).
    private func firstIndex(above value: UInt64) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if ring[(first + middle) % ring.count] > value { high = middle } else { low = middle + 1 }
        }
        return low
    }

    private func contains(_ value: UInt64) -> Bool {
        let above = firstIndex(above: value)
        return above > 0 && ring[(first + above - 1) % ring.count] == value
    }
}
