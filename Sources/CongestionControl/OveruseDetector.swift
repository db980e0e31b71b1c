/// The over-use detector with its adaptive threshold γ (draft-ietf-rmcat-gcc-02 §5.5, with
/// libwebrtc's trendline parameters): the modified trend m is compared with γ. Above γ for more
/// than 10 ms and at least two samples, with the trend not falling, is over-use; below −γ is
/// under-use; anything else is normal. γ follows |m| at k_up = 0.0087 per ms when |m| is above
/// it and k_down = 0.039 per ms when below (time steps capped at 100 ms), within 6…600 ms, and
/// ignores spikes more than 15 ms above it, so a long-lived TCP flow's standing queue does not
/// starve the media flow while a sudden queue still registers.
///
/// Driven by `DelayBasedEstimator` after each trendline update.
struct OveruseDetector: Sendable {
    static let upGain = 0.0087
    static let downGain = 0.039
    static let thresholdRange: ClosedRange<Double> = 6...600
    static let initialThreshold = 12.5
    static let maximumAdaptOffset = 15.0
    static let maximumTimeDelta = 100.0
    static let overusingTimeThreshold = 10.0

    /// γ, ms.
    private(set) var threshold = OveruseDetector.initialThreshold
    private(set) var usage = BandwidthUsage.normal
    /// How long the trend has stayed above γ, ms; nil while it is not.
    private var timeOverUsing: Double?
    private var overuseCounter = 0
    private var previousTrend = 0.0
    /// When γ was last adapted, ms on the receiver's (anchored) clock.
    private var lastUpdate: Double?

    /// Classifies one sample: `modifiedTrend` from the trendline, the raw `trend` (to see if it
    /// still rises), the send delta of the pair of groups (ms) and its arrival time (ms).
    @discardableResult
    mutating func detect(modifiedTrend: Double, trend: Double, numberOfDeltas: Int, sendDelta: Double, now: Double)
        -> BandwidthUsage
    {
        guard numberOfDeltas >= 2 else {
            usage = .normal
            return usage
        }
        if modifiedTrend > threshold {
            let overUsing = timeOverUsing.map { $0 + sendDelta } ?? sendDelta / 2
            timeOverUsing = overUsing
            overuseCounter += 1
            if overUsing > Self.overusingTimeThreshold && overuseCounter > 1 && trend >= previousTrend {
                timeOverUsing = 0
                overuseCounter = 0
                usage = .overusing
            }
        } else if modifiedTrend < -threshold {
            timeOverUsing = nil
            overuseCounter = 0
            usage = .underusing
        } else {
            timeOverUsing = nil
            overuseCounter = 0
            usage = .normal
        }
        previousTrend = trend
        adaptThreshold(modifiedTrend: modifiedTrend, now: now)
        return usage
    }

    mutating func reset() {
        self = OveruseDetector()
    }

    private mutating func adaptThreshold(modifiedTrend: Double, now: Double) {
        let last = lastUpdate ?? now
        lastUpdate = now
        let magnitude = abs(modifiedTrend)
        guard magnitude.isFinite, magnitude <= threshold + Self.maximumAdaptOffset else { return }
        let gain = magnitude < threshold ? Self.downGain : Self.upGain
        let elapsed = min(max(now - last, 0), Self.maximumTimeDelta)
        let adapted = threshold + gain * (magnitude - threshold) * elapsed
        threshold = min(max(adapted, Self.thresholdRange.lowerBound), Self.thresholdRange.upperBound)
    }
}
