/// The loss-based controller (draft-ietf-rmcat-gcc-02 §6, libwebrtc's SendSideBandwidthEstimation
/// without its experiments): once at least 20 packets over at least 1 s have been reported,
/// their loss fraction decides. Under 2 %: increase to 1.08 × the lowest estimate of the last
/// second + 1 kbit/s (a sender that just held a rate can step up at once), but not above the
/// delay-based estimate. 2…10 %: hold. Over 10 %: the rate being sent (the lower of the two
/// estimates) × (1 − 0.5 × loss), at most once per 300 ms + RTT. In the first 2 s, while
/// nothing is lost, it follows the delay-based estimate up. The final target is the lower of
/// the two estimates.
///
/// One departure from libwebrtc: it caps this estimate at the delay-based one on every update,
/// so each delay-based back-off also lowered the loss-based estimate, and under random loss of
/// 2–10 % (hold) it never came back: the target ratcheted down with every over-use. Here the
/// delay-based estimate bounds increases and is where decreases start from, but a delay-based
/// back-off alone does not lower the loss-based estimate.
///
/// Driven by `SendSideBandwidthEstimator`: `addPackets` with each feedback's newly lost and
/// received counts, `setDelayBasedLimit` with the delay-based estimate, `setSendBitrate` after
/// a probe result, and `update(now:)` once per feedback.
struct LossBasedController: Sendable {
    static let lowLossThreshold = 0.02
    static let highLossThreshold = 0.10
    static let increaseInterval: Int64 = 1_000_000
    static let decreaseInterval: Int64 = 300_000
    static let startPhase: Int64 = 2_000_000
    static let minimumPacketsPerReport = 20
    /// libwebrtc feeds this controller from RTCP receiver reports, about one a second, so each
    /// loss fraction covers hundreds of packets; transport-cc feedback comes every 100 ms, so
    /// packets are gathered for at least this long (µs) as well as at least 20 packets. With 20
    /// packets alone, 5 % random loss reads as 0 % or ≥ 15 % in half the windows.
    static let minimumReportWindow: Int64 = 1_000_000
    /// Loss older than this (1.2 × libwebrtc's 5 s maximum RTCP interval) no longer drives the rate.
    static let reportTimeout: Int64 = 6_000_000

    let range: ClosedRange<Double>
    /// The loss-based estimate, bit/s.
    private(set) var bitrate: Double
    /// The loss fraction of the last report window, 0…1.
    private(set) var lossFraction = 0.0
    /// µs; set by the caller from RTCP.
    var roundTripTime: Int64 = 0
    private var delayBasedLimit = Double.infinity
    private var lostSinceReport = 0
    private var expectedSinceReport = 0
    private var windowStart: Int64?
    private var firstReport: Int64?
    private var lastReport: Int64?
    private var lastDecrease: Int64?
    private var hasDecreasedSinceReport = false
    private var history = MinimumWindow(capacity: 64)

    init(range: ClosedRange<Double>, start: Double) {
        self.range = range
        bitrate = min(max(start, range.lowerBound), range.upperBound)
    }

    /// Whether loss is limiting the rate now (the last window lost 2 % or more).
    var isLossLimited: Bool { lossFraction >= Self.lowLossThreshold }

    /// Counts one feedback's newly resolved packets: `expected` packets whose fate is now known,
    /// `lost` of them lost (negative when earlier losses turned out received). A loss fraction is
    /// formed once 20 packets and 1 s are in.
    mutating func addPackets(lost: Int, expected: Int, now: Int64) {
        if firstReport == nil { firstReport = now }
        let start = windowStart ?? now
        windowStart = start
        lostSinceReport += lost
        expectedSinceReport += max(expected, 0)
        guard expected > 0, expectedSinceReport >= Self.minimumPacketsPerReport,
            now - start >= Self.minimumReportWindow || now < start
        else { return }
        windowStart = now
        lossFraction = min(Double(max(lostSinceReport, 0)) / Double(expectedSinceReport), 1)
        lostSinceReport = 0
        expectedSinceReport = 0
        hasDecreasedSinceReport = false
        lastReport = now
    }

    /// The delay-based estimate, which bounds this one's increases.
    mutating func setDelayBasedLimit(_ limit: Double) {
        delayBasedLimit = limit.isFinite ? limit : .infinity
    }

    /// A probe result: the estimate jumps to it and the last second's history is forgotten.
    mutating func setSendBitrate(_ value: Double) {
        bitrate = clamped(value)
        history.removeAll()
    }

    /// Applies the rules above to the last report window.
    mutating func update(now: Int64) {
        if lossFraction == 0, let firstReport, now - firstReport < Self.startPhase, delayBasedLimit.isFinite,
            delayBasedLimit > bitrate
        {
            history.removeAll()
            history.push(time: now, value: bitrate)
            bitrate = clamped(delayBasedLimit)
            return
        }
        history.dropOlder(than: now - Self.increaseInterval)
        history.push(time: now, value: bitrate)
        guard let lastReport, now - lastReport < Self.reportTimeout else { return }
        if lossFraction <= Self.lowLossThreshold {
            let increased = min((history.minimum ?? bitrate) * 1.08 + 1_000, delayBasedLimit)
            bitrate = clamped(max(bitrate, increased))
        } else if lossFraction > Self.highLossThreshold, !hasDecreasedSinceReport, decreaseAllowed(now: now) {
            lastDecrease = now
            hasDecreasedSinceReport = true
            bitrate = clamped(min(bitrate, delayBasedLimit) * (1 - 0.5 * lossFraction))
        }
    }

    private func decreaseAllowed(now: Int64) -> Bool {
        guard let lastDecrease else { return true }
        return now - lastDecrease >= Self.decreaseInterval + roundTripTime
    }

    private func clamped(_ value: Double) -> Double {
        guard value.isFinite else { return min(max(bitrate, range.lowerBound), range.upperBound) }
        return min(max(value, range.lowerBound), range.upperBound)
    }
}

/// The minimum of the values pushed in a sliding time window (a monotonic deque in a fixed
/// ring): `push` drops the newer values that are not lower, `dropOlder` the expired ones, so the
/// oldest entry is the minimum. When the ring is full the oldest entry is dropped.
struct MinimumWindow: Sendable {
    private var times: [Int64]
    private var values: [Double]
    private var head = 0
    private(set) var count = 0

    init(capacity: Int) {
        times = Array(repeating: 0, count: max(capacity, 1))
        values = Array(repeating: 0, count: max(capacity, 1))
    }

    var minimum: Double? { count > 0 ? values[head] : nil }

    mutating func push(time: Int64, value: Double) {
        while count > 0, values[(head + count - 1) % values.count] >= value { count -= 1 }
        if count == values.count { dropFirst() }
        let index = (head + count) % values.count
        times[index] = time
        values[index] = value
        count += 1
    }

    /// Drops the entries at or before `time`.
    mutating func dropOlder(than time: Int64) {
        while count > 0, times[head] <= time { dropFirst() }
    }

    mutating func removeAll() {
        head = 0
        count = 0
    }

    private mutating func dropFirst() {
        head = (head + 1) % values.count
        count -= 1
    }
}
