#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The delay-based rate controller (draft-ietf-rmcat-gcc-02 §5.6, libwebrtc's AimdRateControl):
/// a state machine driven by the detector's signal. Over-use → Decrease: the rate drops to
/// β = 0.85 × the acknowledged bitrate, once per RTT (10…200 ms), and the controller holds.
/// Under-use → Hold (the queues drain). Normal → Increase: multiplicative (up to 8 %/s) while
/// the link capacity is unknown, additive (about one packet per response time, RTT + 100 ms,
/// doubled) near the capacity found at the last over-use, and never above 1.5 × the acknowledged
/// bitrate + 10 kbit/s, so an application-limited sender does not inflate the estimate.
///
/// Driven by `DelayBasedEstimator` with each feedback's signal, the acknowledged bitrate and
/// `now`, and by `setEstimate` for probe results; `roundTripTime` comes from RTCP.
struct AimdRateController: Sendable {
    static let beta = 0.85
    static let multiplicativeIncreasePerSecond = 1.08
    static let minimumMultiplicativeIncrease = 1_000.0
    static let minimumAdditiveIncreasePerSecond = 4_000.0
    static let throughputLimitFactor = 1.5
    static let throughputLimitOffset = 10_000.0
    static let defaultRoundTripTime: Int64 = 200_000

    let range: ClosedRange<Double>
    /// The current delay-based estimate, bit/s.
    private(set) var bitrate: Double
    private(set) var state = RateControlState.hold
    private(set) var linkCapacity = LinkCapacityEstimator()
    /// µs; clamped by the caller to 0…10 s.
    var roundTripTime = AimdRateController.defaultRoundTripTime
    private var latestThroughput: Double
    private var lastChange: Int64?
    private(set) var lastDecrease: Int64?

    init(range: ClosedRange<Double>, start: Double) {
        self.range = range
        bitrate = min(max(start, range.lowerBound), range.upperBound)
        latestThroughput = bitrate
    }

    /// Whether a further decrease is due while over-using: an RTT (10…200 ms) after the last
    /// change, or at once when the throughput fell below half the estimate.
    func timeToReduceFurther(now: Int64, throughput: Double) -> Bool {
        let interval = min(max(roundTripTime, 10_000), 200_000)
        if let lastChange, now - lastChange < interval {
            return throughput < 0.5 * bitrate
        }
        return true
    }

    /// Updates with the detector's signal and the acknowledged bitrate (nil: none measured yet).
    @discardableResult
    mutating func update(usage: BandwidthUsage, throughput: Double?, now: Int64) -> Double {
        if let throughput, throughput.isFinite, throughput >= 0 { latestThroughput = throughput }
        let throughput = latestThroughput
        changeState(usage: usage, now: now)
        switch state {
        case .hold:
            break
        case .increase:
            increase(throughput: throughput, now: now)
        case .decrease:
            decrease(throughput: throughput, now: now)
        }
        return bitrate
    }

    /// Sets the estimate outright (a probe result, or halving before any throughput is known).
    mutating func setEstimate(_ value: Double, now: Int64) {
        let previous = bitrate
        bitrate = clamp(value)
        lastChange = now
        if bitrate < previous { lastDecrease = now }
    }

    private mutating func changeState(usage: BandwidthUsage, now: Int64) {
        switch usage {
        case .normal:
            if state == .hold {
                lastChange = now
                state = .increase
            }
        case .overusing:
            state = .decrease
        case .underusing:
            state = .hold
        }
    }

    private mutating func increase(throughput: Double, now: Int64) {
        if throughput > linkCapacity.upperBound { linkCapacity.reset() }
        let limit = Self.throughputLimitFactor * throughput + Self.throughputLimitOffset
        if bitrate < limit {
            let elapsed = lastChange.map { Double(max(now - $0, 0)) / 1_000_000 }
            let increased: Double
            if linkCapacity.hasEstimate {
                increased = bitrate + additiveIncreasePerSecond() * (elapsed ?? 0)
            } else {
                let alpha = pow(Self.multiplicativeIncreasePerSecond, min(elapsed ?? 1, 1))
                increased = bitrate + max(bitrate * (alpha - 1), Self.minimumMultiplicativeIncrease)
            }
            bitrate = clamp(min(increased, limit))
        }
        lastChange = now
    }

    private mutating func decrease(throughput: Double, now: Int64) {
        var decreased = throughput * Self.beta
        if decreased > bitrate, let capacity = linkCapacity.estimate {
            decreased = Self.beta * capacity
        }
        if decreased < bitrate { bitrate = clamp(decreased) }
        if throughput < linkCapacity.lowerBound { linkCapacity.reset() }
        linkCapacity.onOveruse(throughput: throughput)
        state = .hold
        lastChange = now
        lastDecrease = now
    }

    /// About one average packet per response time, at least 4 kbit/s per second.
    private func additiveIncreasePerSecond() -> Double {
        let frameSize = bitrate / 30 / 8
        let packetsPerFrame = max((frameSize / 1_200).rounded(.up), 1)
        let averagePacketBits = frameSize / packetsPerFrame * 8
        let responseTime = 2 * Double(roundTripTime + 100_000) / 1_000_000
        return max(Self.minimumAdditiveIncreasePerSecond, averagePacketBits / responseTime)
    }

    private func clamp(_ value: Double) -> Double {
        guard value.isFinite else { return bitrate }
        return min(max(value, range.lowerBound), range.upperBound)
    }
}

/// The link capacity seen at over-use (libwebrtc's LinkCapacityEstimator): an exponential
/// average of the throughput whenever the detector signalled over-use, with a normalised
/// variance, in kbit/s. Near that capacity the rate controller increases additively; a
/// throughput far outside estimate ± 3 σ forgets it.
struct LinkCapacityEstimator: Sendable {
    private var estimateKbps: Double?
    private var deviationKbps = 0.4

    var hasEstimate: Bool { estimateKbps != nil }
    /// bit/s.
    var estimate: Double? { estimateKbps.map { $0 * 1_000 } }

    /// bit/s; infinite without an estimate.
    var upperBound: Double {
        guard let estimateKbps else { return .infinity }
        return (estimateKbps + 3 * standardDeviation(estimateKbps)) * 1_000
    }

    /// bit/s; 0 without an estimate.
    var lowerBound: Double {
        guard let estimateKbps else { return 0 }
        return max(0, estimateKbps - 3 * standardDeviation(estimateKbps)) * 1_000
    }

    mutating func onOveruse(throughput: Double) {
        update(sampleKbps: throughput / 1_000, alpha: 0.05)
    }

    mutating func reset() {
        estimateKbps = nil
    }

    private func standardDeviation(_ estimate: Double) -> Double {
        (deviationKbps * estimate).squareRoot()
    }

    private mutating func update(sampleKbps: Double, alpha: Double) {
        guard sampleKbps.isFinite, sampleKbps >= 0 else { return }
        let estimate = estimateKbps.map { (1 - alpha) * $0 + alpha * sampleKbps } ?? sampleKbps
        estimateKbps = estimate
        let normalisation = max(estimate, 1)
        let error = estimate - sampleKbps
        deviationKbps = (1 - alpha) * deviationKbps + alpha * error * error / normalisation
        deviationKbps = min(max(deviationKbps, 0.4), 2.5)
    }
}
