/// The arrival-time filter (draft-ietf-rmcat-gcc-02 §5.4, as libwebrtc's TrendlineEstimator does
/// it): from each pair of packet groups, the delay variation d = inter-arrival − inter-departure
/// is accumulated (the queuing delay built up so far), smoothed exponentially (coefficient 0.9),
/// and the last 20 (arrival time, smoothed delay) points are fitted with a least-squares line.
/// Its slope, the trend, says whether the queues grow (> 0) or drain (< 0); `OveruseDetector`
/// compares it with the adaptive threshold.
///
/// Driven by `DelayBasedEstimator` with each `InterArrival.Deltas`. The window is a fixed ring
/// (least squares does not care about the order of its points), so an update never allocates.
struct TrendlineEstimator: Sendable {
    static let windowSize = 20
    static let smoothingCoefficient = 0.9
    /// The trend is scaled by this (and by the number of deltas, up to 60) before it is
    /// compared with the threshold, which was tuned for the older Kalman filter's offsets.
    static let thresholdGain = 4.0
    static let minimumDeltasForFullGain = 60
    static let deltaCounterMaximum = 1_000

    private var arrivalTimes: [Double]
    private var smoothedDelays: [Double]
    private var count = 0
    private var next = 0
    private var firstArrival: Int64?
    private var accumulatedDelay = 0.0
    private var smoothedDelay = 0.0
    /// Deltas seen since the last reset, up to 1,000.
    private(set) var numberOfDeltas = 0
    /// The last slope fitted (kept while the window is not full), ms of delay per ms.
    private(set) var trend = 0.0

    init() {
        arrivalTimes = Array(repeating: 0, count: Self.windowSize)
        smoothedDelays = Array(repeating: 0, count: Self.windowSize)
    }

    /// The trend scaled for the detector: min(deltas, 60) × trend × 4.
    var modifiedTrend: Double {
        Double(min(numberOfDeltas, Self.minimumDeltasForFullGain)) * trend * Self.thresholdGain
    }

    /// Adds one pair of groups whose later group ended at `arrivalTime` (µs); returns the trend.
    @discardableResult
    mutating func update(_ deltas: InterArrival.Deltas, arrivalTime: Int64) -> Double {
        let variation = deltas.arrival - deltas.send
        numberOfDeltas = min(numberOfDeltas + 1, Self.deltaCounterMaximum)
        let first = firstArrival ?? arrivalTime
        firstArrival = first
        accumulatedDelay += variation
        smoothedDelay = Self.smoothingCoefficient * smoothedDelay + (1 - Self.smoothingCoefficient) * accumulatedDelay
        guard accumulatedDelay.isFinite, smoothedDelay.isFinite else {
            reset()
            return trend
        }
        arrivalTimes[next] = Double(arrivalTime - first) / 1_000
        smoothedDelays[next] = smoothedDelay
        next = (next + 1) % Self.windowSize
        count = min(count + 1, Self.windowSize)
        if count == Self.windowSize, let slope = fittedSlope() { trend = slope }
        return trend
    }

    mutating func reset() {
        self = TrendlineEstimator()
    }

    /// The least-squares slope of smoothed delay over arrival time; nil when every point has
    /// the same arrival time.
    private func fittedSlope() -> Double? {
        var sumX = 0.0
        var sumY = 0.0
        for index in 0..<count {
            sumX += arrivalTimes[index]
            sumY += smoothedDelays[index]
        }
        let meanX = sumX / Double(count)
        let meanY = sumY / Double(count)
        var numerator = 0.0
        var denominator = 0.0
        for index in 0..<count {
            let dx = arrivalTimes[index] - meanX
            numerator += dx * (smoothedDelays[index] - meanY)
            denominator += dx * dx
        }
        guard denominator > 0 else { return nil }
        let slope = numerator / denominator
        return slope.isFinite ? slope : nil
    }
}
