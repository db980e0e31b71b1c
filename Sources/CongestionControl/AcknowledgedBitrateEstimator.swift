/// The acknowledged bitrate: what the receiver says it received, per its own arrival times
/// (libwebrtc's AcknowledgedBitrateEstimator over its BitrateEstimator). Bytes are summed over
/// windows of 150 ms (500 ms for the first sample) of arrival time, and each window's rate
/// updates a Bayesian estimate that trusts a sample less the farther it is from the estimate,
/// so one burst or gap does not swing it. This is R̂ of draft-ietf-rmcat-gcc-02 §5.6: the rate
/// controller decreases to 0.85 × it and never increases past 1.5 × it.
///
/// Driven by `SendSideBandwidthEstimator` with each acknowledged packet in arrival order;
/// `expectFastRateChange` after a probe result lets the next samples move it quickly.
/// Arrival times that go backwards restart the window.
struct AcknowledgedBitrateEstimator: Sendable {
    static let initialWindow: Int64 = 500_000
    static let window: Int64 = 150_000
    static let uncertaintyScale = 10.0
    static let initialVariance = 50.0
    static let variancePerSample = 5.0

    /// kbit/s, nil before the first complete window.
    private var estimateKbps: Double?
    private var variance = AcknowledgedBitrateEstimator.initialVariance
    private var bytesInWindow = 0
    /// Arrival time covered by the current window so far, µs.
    private var windowElapsed: Int64 = 0
    private var previousArrival: Int64?

    /// bit/s, nil until a first window completed.
    var bitrate: Double? { estimateKbps.map { $0 * 1_000 } }

    mutating func add(arrivalTime: Int64, bytes: Int) {
        let window = estimateKbps == nil ? Self.initialWindow : Self.window
        guard let sampleKbps = updateWindow(arrivalTime: arrivalTime, bytes: max(bytes, 0), window: window) else {
            return
        }
        guard let estimate = estimateKbps else {
            estimateKbps = sampleKbps
            return
        }
        let uncertainty = estimate > 0 ? Self.uncertaintyScale * abs(estimate - sampleKbps) / estimate : 0
        let sampleVariance = uncertainty * uncertainty
        let predictedVariance = variance + Self.variancePerSample
        let total = sampleVariance + predictedVariance
        let updated = (sampleVariance * estimate + predictedVariance * sampleKbps) / total
        guard updated.isFinite, updated >= 0 else { return }
        estimateKbps = updated
        variance = sampleVariance * predictedVariance / total
    }

    /// Widens the estimate's variance so it follows the next samples quickly (after a probe).
    mutating func expectFastRateChange() {
        variance += 200
    }

    /// Adds the packet to the current window; returns the window's rate, kbit/s, when it closed.
    private mutating func updateWindow(arrivalTime: Int64, bytes: Int, window: Int64) -> Double? {
        if let previous = previousArrival, arrivalTime < previous {
            previousArrival = nil
            bytesInWindow = 0
            windowElapsed = 0
        }
        if let previous = previousArrival {
            let gap = arrivalTime - previous
            windowElapsed += gap
            if gap > window {
                bytesInWindow = 0
                windowElapsed %= window
            }
        }
        previousArrival = arrivalTime
        var sample: Double?
        if windowElapsed >= window {
            sample = 8 * Double(bytesInWindow) / (Double(window) / 1_000)
            windowElapsed -= window
            bytesInWindow = 0
        }
        bytesInWindow += bytes
        return sample
    }
}
