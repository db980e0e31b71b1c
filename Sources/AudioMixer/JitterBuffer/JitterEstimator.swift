#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Measures network delay variation for one sender and turns it into a target playout delay.
/// Part of `AdaptiveJitterBuffer`; fed once per received packet with that packet's *relative
/// delay* `r = arrival − timestamp` (both in nanoseconds on an arbitrary common origin).
///
/// Two pieces, both O(1) memory:
/// - a **windowed minimum** of `r` over the last ~4 s (8 buckets of 500 ms of arrival time):
///   the delay of the fastest recent packet, i.e. the path's base delay. It follows clock drift
///   (a slower sender makes `r` creep up, a faster one down) instead of remembering a stale
///   minimum forever. While no packets come (DTX) it keeps its last value, because the RTP
///   clock keeps running through silence.
/// - a **histogram of jitter** `j = r − minimum` in 5 ms buckets with exponential forgetting
///   (half-life `halfLifePackets`), whose upper quantile is the delay that would have caught that
///   share of recent packets. It rises within a few dozen jittery packets and decays back over
///   a few half-lives once the path calms down — the asymmetric behaviour a jitter buffer wants
///   (late loss costs more than a little extra delay).
struct JitterEstimator: Sendable {
    static let bucketNanoseconds: Int64 = 5_000_000
    static let bucketCount = 81  // 0…400 ms, the last bucket collects everything beyond
    static let windowBuckets = 8
    static let windowBucketNanoseconds: Int64 = 500_000_000

    private var histogram: [Double]
    private var histogramTotal = 0.0
    /// Weight of the next sample. Growing it by 1/decay per packet is the same as multiplying
    /// every bucket by `decay`, without touching the buckets; rescaled before it can overflow.
    private var weight = 1.0
    private let growth: Double
    private let quantile: Double

    private var windowMinimum: [Int64]
    private var windowStart: [Int64]
    private var windowHead = 0
    private var windowValid = 0
    /// The last computed base delay, kept when every window bucket has expired.
    private(set) var baseDelay: Int64?
    /// The current jitter quantile in nanoseconds.
    private(set) var jitterQuantile: Int64 = 0

    init(quantile: Double, halfLifePackets: Int) {
        self.quantile = min(max(quantile, 0.5), 0.999)
        let halfLife = Double(max(halfLifePackets, 1))
        growth = pow(2, 1 / halfLife)  // 1 / 0.5^(1/halfLife)
        histogram = [Double](repeating: 0, count: Self.bucketCount)
        windowMinimum = [Int64](repeating: .max, count: Self.windowBuckets)
        windowStart = [Int64](repeating: .min, count: Self.windowBuckets)
    }

    /// Records one packet; returns its jitter (r − base delay), ≥ 0.
    @discardableResult
    mutating func record(relativeDelay r: Int64, arrival: Int64) -> Int64 {
        updateWindow(r, arrival: arrival)
        let base = baseDelay ?? r
        let jitter = max(0, r &- base)
        addToHistogram(jitter)
        return jitter
    }

    /// The jitter a packet with relative delay `r` would have, without recording it.
    func jitter(of r: Int64) -> Int64 {
        max(0, r &- (baseDelay ?? r))
    }

    /// Forgets the base delay (the timeline changed: a resynchronization) but keeps the jitter
    /// history, which describes the network path rather than the sender's clock.
    mutating func rebase() {
        for index in 0..<Self.windowBuckets {
            windowMinimum[index] = .max
            windowStart[index] = .min
        }
        windowValid = 0
        baseDelay = nil
    }

    // MARK: - Windowed minimum

    private mutating func updateWindow(_ r: Int64, arrival: Int64) {
        if windowValid == 0 || arrival &- windowStart[windowHead] >= Self.windowBucketNanoseconds {
            windowHead = (windowHead + 1) % Self.windowBuckets
            windowStart[windowHead] = arrival
            windowMinimum[windowHead] = r
            windowValid = min(windowValid + 1, Self.windowBuckets)
        } else if r < windowMinimum[windowHead] {
            windowMinimum[windowHead] = r
        }
        var minimum = Int64.max
        let horizon = Int64(Self.windowBuckets) * Self.windowBucketNanoseconds
        for index in 0..<Self.windowBuckets where windowStart[index] != .min {
            // Buckets older than the horizon no longer count (arrival times only grow).
            if arrival &- windowStart[index] < horizon, windowMinimum[index] < minimum {
                minimum = windowMinimum[index]
            }
        }
        if minimum != .max { baseDelay = minimum }
    }

    // MARK: - Histogram

    private mutating func addToHistogram(_ jitter: Int64) {
        let bucket = Int(min(jitter / Self.bucketNanoseconds, Int64(Self.bucketCount - 1)))
        histogram[bucket] += weight
        histogramTotal += weight
        weight *= growth
        if weight > 1e12 { rescale() }
        jitterQuantile = computeQuantile()
    }

    private mutating func rescale() {
        let factor = 1 / weight
        for index in 0..<Self.bucketCount { histogram[index] *= factor }
        histogramTotal *= factor
        weight = 1
    }

    /// Upper edge of the bucket where the mass above drops below 1 − quantile.
    private func computeQuantile() -> Int64 {
        guard histogramTotal > 0 else { return 0 }
        let allowedAbove = histogramTotal * (1 - quantile)
        var above = 0.0
        var index = Self.bucketCount - 1
        while index > 0 {
            above += histogram[index]
            if above > allowedAbove { break }
            index -= 1
        }
        return Int64(index + 1) * Self.bucketNanoseconds
    }
}
