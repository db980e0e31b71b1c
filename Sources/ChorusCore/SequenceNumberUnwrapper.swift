/// Turns a wrapping counter of `bitWidth` bits (RTP's 16-bit sequence number, its 32-bit
/// timestamp, VP8's 15-bit picture ID) into a monotonic 64-bit value, in the spirit of RFC 3550
/// §A.1's "cycles" count: each new value is placed at the distance from the highest value seen so
/// far that is shortest modulo 2^bitWidth, so it goes forward across a wrap and backward for a
/// packet that was reordered, even across the wrap.
///
/// Drive it with every value in arrival order through `unwrap(_:)`; `peek(_:)` answers the same
/// question without recording the value. The first value is placed in cycle 1 (it unwraps to
/// `2^bitWidth + value`) so that packets reordered from before it still get a smaller, distinct
/// number instead of going negative. Arithmetic wraps rather than traps: no input can crash it.
public struct WrappingCounterUnwrapper: Sendable, Equatable {
    /// Width of the wire counter, 1…32 bits.
    public let bitWidth: Int
    /// Highest unwrapped value seen so far, nil before the first value.
    public private(set) var highest: UInt64?

    private var modulus: UInt64 { 1 << UInt64(bitWidth) }

    /// `bitWidth` is a programming choice, not peer input, hence the precondition.
    public init(bitWidth: Int) {
        precondition((1...32).contains(bitWidth), "counter width must be 1…32 bits")
        self.bitWidth = bitWidth
    }

    /// The unwrapped value for `value`, without recording it.
    public func peek(_ value: UInt64) -> UInt64 {
        let mask = modulus - 1
        let wire = value & mask
        guard let highest else { return modulus + wire }
        // Forward distance from the highest value's wire form; a distance of half the range or
        // more is read as "older" (RFC 1982 serial-number arithmetic makes the same choice).
        let forward = (wire &- (highest & mask)) & mask
        if forward < modulus / 2 {
            return highest &+ forward
        }
        let backward = modulus - forward
        // Cannot underflow once the first value sits in cycle 1, but stay total anyway.
        return highest >= backward ? highest - backward : wire
    }

    /// The unwrapped value for `value`; raises `highest` when it moved forward.
    @discardableResult
    public mutating func unwrap(_ value: UInt64) -> UInt64 {
        let extended = peek(value)
        if let current = highest {
            if extended > current { highest = extended }
        } else {
            highest = extended
        }
        return extended
    }

    /// Forgets the history, e.g. after an SSRC change.
    public mutating func reset() {
        highest = nil
    }
}

/// RTP sequence numbers (RFC 3550 §5.1, 16 bits) extended to 64 bits at the edge, so that loss
/// detection, NACK lists and the RTX cache never see a wrap. See `WrappingCounterUnwrapper` for
/// the placement rule; the first sequence number `s` unwraps to `65_536 + s`.
public struct SequenceNumberUnwrapper: Sendable, Equatable {
    private var counter = WrappingCounterUnwrapper(bitWidth: 16)

    public init() {}

    /// Highest extended sequence number seen so far.
    public var highest: UInt64? { counter.highest }

    /// Extended form of `sequenceNumber`, recorded as seen.
    @discardableResult
    public mutating func unwrap(_ sequenceNumber: UInt16) -> UInt64 {
        counter.unwrap(UInt64(sequenceNumber))
    }

    /// Extended form of `sequenceNumber`, without recording it.
    public func peek(_ sequenceNumber: UInt16) -> UInt64 {
        counter.peek(UInt64(sequenceNumber))
    }

    public mutating func reset() { counter.reset() }
}

/// RTP timestamps (RFC 3550 §5.1, 32 bits) extended to 64 bits, e.g. for jitter buffers and
/// playout clocks that must not see the 2^32 wrap (about 24.9 hours at 48 kHz). The first
/// timestamp `t` unwraps to `2^32 + t`.
public struct TimestampUnwrapper: Sendable, Equatable {
    private var counter = WrappingCounterUnwrapper(bitWidth: 32)

    public init() {}

    public var highest: UInt64? { counter.highest }

    @discardableResult
    public mutating func unwrap(_ timestamp: UInt32) -> UInt64 {
        counter.unwrap(UInt64(timestamp))
    }

    public func peek(_ timestamp: UInt32) -> UInt64 {
        counter.peek(UInt64(timestamp))
    }

    public mutating func reset() { counter.reset() }
}
