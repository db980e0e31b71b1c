/// The delay-based half of GCC (draft-ietf-rmcat-gcc-02 §5; libwebrtc's DelayBasedBwe): each
/// feedback's acknowledged packets, in arrival order, go through the packet grouping
/// (`InterArrival`), the arrival-time filter (`TrendlineEstimator`) and the over-use detector
/// (`OveruseDetector`); the detector's last signal then drives the rate controller
/// (`AimdRateController`):
/// - over-using: decrease to 0.85 × the acknowledged bitrate once per RTT; before any throughput
///   was measured, halve the estimate instead (at most once per RTT, 10…200 ms);
/// - otherwise, a probe result, when there is one, becomes the estimate; without one the rate
///   controller increases or holds.
/// A stream silent for more than 2 s starts the grouping and the filter over.
///
/// Driven by `SendSideBandwidthEstimator` once per feedback, with the packets, the acknowledged
/// bitrate and the probe result.
struct DelayBasedEstimator: Sendable {
    static let streamTimeout: Int64 = 2_000_000

    private var interArrival = InterArrival()
    private var trendline = TrendlineEstimator()
    private(set) var detector = OveruseDetector()
    private(set) var rateController: AimdRateController
    private var lastPacketFeedback: Int64?

    init(range: ClosedRange<Double>, start: Double) {
        rateController = AimdRateController(range: range, start: start)
    }

    var bitrate: Double { rateController.bitrate }
    var rateControlState: RateControlState { rateController.state }
    var lastDecrease: Int64? { rateController.lastDecrease }

    /// µs, from RTCP.
    mutating func setRoundTripTime(_ microseconds: Int64) {
        rateController.roundTripTime = microseconds
    }
    var usage: BandwidthUsage { detector.usage }

    /// Starts grouping and filtering over (the receiver's clock was re-anchored).
    mutating func resetDetection() {
        interArrival.reset()
        trendline.reset()
        detector.reset()
    }

    /// Processes one feedback's packets (sorted by arrival, times in µs) received at `now`.
    /// Returns whether the estimate came from `probe`.
    @discardableResult
    mutating func update(
        packets: ArraySlice<PacketFeedback>, acknowledged: Double?, probe: Double?, now: Int64
    ) -> Bool {
        guard !packets.isEmpty else { return false }
        if let last = lastPacketFeedback, now - last > Self.streamTimeout { resetDetection() }
        lastPacketFeedback = now
        for packet in packets { detect(packet, now: now) }
        return updateEstimate(acknowledged: acknowledged, probe: probe, now: now)
    }

    private mutating func detect(_ packet: PacketFeedback, now: Int64) {
        guard
            let deltas = interArrival.add(
                sendTime: packet.sendTime, arrivalTime: packet.arrivalTime, feedbackTime: now)
        else { return }
        let trend = trendline.update(deltas, arrivalTime: packet.arrivalTime)
        detector.detect(
            modifiedTrend: trendline.modifiedTrend, trend: trend, numberOfDeltas: trendline.numberOfDeltas,
            sendDelta: deltas.send, now: Double(packet.arrivalTime) / 1_000)
    }

    private mutating func updateEstimate(acknowledged: Double?, probe: Double?, now: Int64) -> Bool {
        if detector.usage == .overusing {
            if let acknowledged {
                if rateController.timeToReduceFurther(now: now, throughput: acknowledged) {
                    rateController.update(usage: .overusing, throughput: acknowledged, now: now)
                }
            } else if rateController.timeToReduceFurther(now: now, throughput: rateController.bitrate) {
                // libwebrtc's comment says "every 200 ms", its code halves on every feedback; this
                // keeps to the comment: at most once per RTT (10…200 ms).
                rateController.setEstimate(rateController.bitrate / 2, now: now)
            }
            return false
        }
        if let probe {
            rateController.setEstimate(probe, now: now)
            return true
        }
        rateController.update(usage: detector.usage, throughput: acknowledged, now: now)
        return false
    }
}
