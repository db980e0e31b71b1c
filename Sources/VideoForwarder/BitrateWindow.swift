import ChorusCore

/// The rate at which one stream's bytes arrive, over a sliding window (one second by default):
/// what a simulcast layer costs a subscriber, measured rather than taken from the publisher's
/// configuration (mediasoup and LiveKit size layers the same way).
///
/// The window is a ring of `buckets` equal time buckets, each holding the bytes that arrived in
/// it and the bucket number it was last used for, so a stale bucket is recognised and reset
/// instead of swept. `add` is O(1) and `bitsPerSecond` O(buckets); neither allocates, so it sits
/// on the per-packet path. The rate divides the bytes of the buckets still in the window by the
/// window's length less the unfinished part of the current bucket (between `window − bucket`
/// and `window`): a stream that just started reads low for its first window, never high, and
/// one that stopped reads 0 a window later.
///
/// Driven by its owner: `add(bytes:now:)` per packet, `bitsPerSecond(now:)` when a layer is
/// chosen. Time is the caller's monotonic `MediaTime`; a bucket written at a later time than
/// `now` (time going backwards) is not counted, and is reset when its slot is next written.
public struct BitrateWindow: Sendable {
    /// The window's length in nanoseconds.
    public let window: UInt64
    private let bucketLength: UInt64
    private var bytes: [UInt64]
    /// The bucket number (`time / bucketLength`) each slot's bytes belong to.
    private var bucketNumbers: [UInt64]

    /// `window` in nanoseconds (at least 1 ms), split into `buckets` buckets (2…1,000).
    public init(window: UInt64 = 1_000_000_000, buckets: Int = 20) {
        let count = min(max(buckets, 2), 1_000)
        bucketLength = max(window, 1_000_000) / UInt64(count)
        self.window = bucketLength * UInt64(count)
        bytes = Array(repeating: 0, count: count)
        bucketNumbers = Array(repeating: UInt64.max, count: count)
    }

    /// Counts `byteCount` bytes arriving at `now` (a negative count is ignored).
    public mutating func add(bytes byteCount: Int, now: MediaTime) {
        guard byteCount > 0 else { return }
        let number = now.nanoseconds / bucketLength
        let slot = Int(number % UInt64(bytes.count))
        if bucketNumbers[slot] != number {
            bucketNumbers[slot] = number
            bytes[slot] = 0
        }
        let (sum, overflow) = bytes[slot].addingReportingOverflow(UInt64(byteCount))
        bytes[slot] = overflow ? .max : sum
    }

    /// The arrival rate over the window that ends at `now`, in bits per second.
    public func bitsPerSecond(now: MediaTime) -> UInt64 {
        let current = now.nanoseconds / bucketLength
        let count = UInt64(bytes.count)
        var total: UInt64 = 0
        for slot in bytes.indices {
            let number = bucketNumbers[slot]
            guard number <= current, current - number < count else { continue }
            let (sum, overflow) = total.addingReportingOverflow(bytes[slot])
            total = overflow ? .max : sum
        }
        guard total > 0 else { return 0 }
        let span = (count - 1) * bucketLength + now.nanoseconds % bucketLength
        let rate = Double(total) * 8 * 1e9 / Double(span)
        return rate >= 1.8e19 ? .max : UInt64(rate)
    }
}
