import ChorusCore
import Testing

@testable import CongestionControl

/// The loss-based controller, the throughput and probe estimators, the probe controller, the
/// send history and the configuration, one by one.
@Suite("Loss-based controller, acknowledged bitrate, probes, history")
struct LossAndProbePartsTests {
    private static let second: Int64 = 1_000_000

    /// < 2 %: +8 % (+1 kbit/s) over the last second's lowest; 2–10 %: hold; > 10 %: × (1 − p/2)
    /// from what is being sent, once per report window.
    @Test func lossRules() {
        var loss = LossBasedController(range: 30_000...50_000_000, start: 1_000_000)
        loss.addPackets(lost: 0, expected: 50, now: 3 * Self.second)
        loss.addPackets(lost: 0, expected: 50, now: 4 * Self.second)
        loss.update(now: 4 * Self.second)
        let raised = 1_000_000 * 1.08 + 1_000
        #expect(loss.bitrate == raised)
        loss.addPackets(lost: 5, expected: 100, now: 5 * Self.second)
        loss.update(now: 5 * Self.second)
        #expect(loss.bitrate == raised, "5 % holds")
        #expect(loss.isLossLimited)
        loss.addPackets(lost: 20, expected: 100, now: 6 * Self.second)
        loss.update(now: 6 * Self.second)
        let factor = 1 - 0.5 * 0.2
        #expect(loss.bitrate == raised * factor)
        loss.update(now: 6 * Self.second + 100_000)
        #expect(loss.bitrate == raised * factor, "one decrease per report")
        loss.setDelayBasedLimit(500_000)
        loss.addPackets(lost: 20, expected: 100, now: 7 * Self.second + 500_000)
        loss.update(now: 7 * Self.second + 500_000)
        #expect(loss.bitrate == 500_000 * factor, "a decrease starts from what is sent")
    }

    /// The delay-based estimate bounds increases but its back-offs alone leave this estimate.
    @Test func delayBasedLimitBoundsIncreasesOnly() {
        var loss = LossBasedController(range: 30_000...50_000_000, start: 1_000_000)
        loss.setDelayBasedLimit(1_020_000)
        loss.addPackets(lost: 0, expected: 50, now: 3 * Self.second)
        loss.addPackets(lost: 0, expected: 50, now: 5 * Self.second)  // after the 2 s start phase
        loss.update(now: 5 * Self.second)
        #expect(loss.bitrate == 1_020_000)
        loss.setDelayBasedLimit(400_000)
        loss.addPackets(lost: 5, expected: 100, now: 6 * Self.second)
        loss.update(now: 6 * Self.second)
        #expect(loss.bitrate == 1_020_000)
        // No report for 6 s or more: loss no longer acts.
        loss.setDelayBasedLimit(50_000_000)
        loss.update(now: 12 * Self.second)
        #expect(loss.bitrate == 1_020_000)
    }

    /// In the first 2 s, with nothing lost, the estimate follows the delay-based one up; windows
    /// need 20 packets and 1 s.
    @Test func startPhaseAndWindows() {
        var loss = LossBasedController(range: 30_000...50_000_000, start: 300_000)
        loss.setDelayBasedLimit(1_800_000)
        loss.addPackets(lost: 0, expected: 5, now: 0)
        loss.update(now: 100_000)
        #expect(loss.bitrate == 1_800_000)
        loss.addPackets(lost: 10, expected: 15, now: 500_000)
        #expect(loss.lossFraction == 0, "1 s not over yet")
        loss.addPackets(lost: 0, expected: 1, now: 1_000_000)
        #expect(loss.lossFraction == 10.0 / 21)
    }

    /// Received bytes over 150 ms windows (500 ms at first), smoothed.
    @Test func acknowledgedBitrate() {
        var acknowledged = AcknowledgedBitrateEstimator()
        #expect(acknowledged.bitrate == nil)
        var time: Int64 = 0
        for _ in 0..<300 {  // 1,250 B every 10 ms: 1 Mbit/s for 3 s
            acknowledged.add(arrivalTime: time, bytes: 1_250)
            time += 10_000
        }
        #expect(abs((acknowledged.bitrate ?? 0) - 1_000_000) < 1_000)
        for _ in 0..<150 {  // then 500 kbit/s for 3 s
            acknowledged.add(arrivalTime: time, bytes: 1_250)
            time += 20_000
        }
        #expect(abs((acknowledged.bitrate ?? 0) - 500_000) < 40_000)
        acknowledged.add(arrivalTime: 0, bytes: 1_250)  // time went backwards: a new window
        #expect(acknowledged.bitrate != nil)
    }

    /// min(send rate, receive rate), or 0.95 × the receive rate when the link was saturated.
    @Test func probeResults() {
        let cluster = ProbeCluster(id: 7, targetBitrate: 4_800_000, minimumBytes: 6_000, minimumPackets: 5,
                                   createdAt: MediaTime(nanoseconds: 0))
        func measure(receiveSpacing: Int64, count: Int = 5) -> Double? {
            var estimator = ProbeBitrateEstimator()
            for index in 0..<Int64(count) {
                estimator.add(PacketFeedback(sendTime: index * 2_000, arrivalTime: 100_000 + index * receiveSpacing,
                                             size: 1_200, probeCluster: 7), cluster: cluster)
            }
            return estimator.takeResult()
        }
        #expect(measure(receiveSpacing: 4_000) == 0.95 * 2_400_000)
        #expect(measure(receiveSpacing: 2_000) == 4_800_000)
        #expect(measure(receiveSpacing: 2_000, count: 3) == nil, "under 80 % of the cluster")
        #expect(measure(receiveSpacing: 500) == nil, "received 4× faster than sent")
        #expect(measure(receiveSpacing: 400_000) == nil, "a receive interval over 1 s")
        var once = ProbeBitrateEstimator()
        for index in 0..<Int64(5) {
            once.add(PacketFeedback(sendTime: index * 2_000, arrivalTime: index * 2_000, size: 1_200, probeCluster: 7),
                     cluster: cluster)
        }
        #expect(once.takeResult() != nil)
        #expect(once.takeResult() == nil)
    }

    /// 3× and 6× the start, then 2× a result over 70 % of the last probe; 1 s without a result
    /// ends the series; periodic probes only with room, an interval after the last probe.
    @Test func probeController() {
        var controller = ProbeController(configuration: BandwidthEstimatorConfiguration().sanitized)
        let first = controller.poll(now: 0, hasRoom: true, lastDecrease: nil)
        #expect(first?.targetBitrate == 900_000)
        #expect(first?.minimumBytes == 1_688)
        #expect(first?.minimumPackets == 5)
        #expect(controller.poll(now: 0, hasRoom: true, lastDecrease: nil)?.targetBitrate == 1_800_000)
        #expect(controller.poll(now: 0, hasRoom: true, lastDecrease: nil) == nil)
        #expect(controller.cluster(id: 1)?.targetBitrate == 900_000)
        #expect(controller.isProbing)
        controller.onEstimate(1_500_000, hasRoom: true, now: 200_000)
        #expect(controller.poll(now: 200_000, hasRoom: true, lastDecrease: nil)?.targetBitrate == 3_000_000)
        controller.onEstimate(2_000_000, hasRoom: true, now: 400_000)
        #expect(controller.poll(now: 400_000, hasRoom: true, lastDecrease: nil) == nil)
        #expect(controller.poll(now: 1_300_000, hasRoom: true, lastDecrease: nil) == nil)
        #expect(controller.state == .complete)
        #expect(controller.poll(now: 5_300_000, hasRoom: false, lastDecrease: nil) == nil)
        #expect(controller.poll(now: 5_300_000, hasRoom: true, lastDecrease: 1_000_000) == nil, "5 s after a decrease")
        #expect(controller.poll(now: 6_000_000, hasRoom: true, lastDecrease: 1_000_000)?.targetBitrate == 4_000_000)
        controller.request(bitrate: 10_000_000, now: 6_000_000)
        #expect(controller.poll(now: 6_000_000, hasRoom: true, lastDecrease: nil) == nil, "already probing")
    }

    /// Probes are capped at the maximum and a capped probe ends the series; no initial probing
    /// when it is off; a request probes once.
    @Test func probeCapsAndRequests() {
        var capped = ProbeController(configuration: BandwidthEstimatorConfiguration(maximumBitrate: 1_000_000).sanitized)
        #expect(capped.poll(now: 0, hasRoom: true, lastDecrease: nil)?.targetBitrate == 900_000)
        #expect(capped.poll(now: 0, hasRoom: true, lastDecrease: nil)?.targetBitrate == 1_000_000)
        #expect(capped.state == .complete)
        var quiet = ProbeController(configuration: BandwidthEstimatorConfiguration(
            initialProbing: false, periodicProbeIntervalNanoseconds: nil))
        #expect(quiet.poll(now: 0, hasRoom: true, lastDecrease: nil) == nil)
        #expect(quiet.poll(now: 60_000_000, hasRoom: true, lastDecrease: nil) == nil)
        quiet.request(bitrate: 200_000, now: 0)
        #expect(quiet.poll(now: 0, hasRoom: true, lastDecrease: nil) == nil, "under the estimate")
        quiet.request(bitrate: 2_000_000, now: 0)
        #expect(quiet.poll(now: 0, hasRoom: true, lastDecrease: nil)?.targetBitrate == 2_000_000)
        #expect(quiet.state == .complete)
        // Probing further from a request: a result over 70 % of the cluster doubles it, a
        // result under it ends the series.
        quiet.request(bitrate: 3_000_000, probeFurther: true, now: 0)
        #expect(quiet.poll(now: 0, hasRoom: true, lastDecrease: nil)?.targetBitrate == 3_000_000)
        quiet.onEstimate(2_800_000, hasRoom: true, now: 100_000)
        #expect(quiet.poll(now: 100_000, hasRoom: true, lastDecrease: nil)?.targetBitrate == 5_600_000)
        quiet.onEstimate(3_000_000, hasRoom: true, now: 200_000)
        #expect(quiet.poll(now: 200_000, hasRoom: true, lastDecrease: nil) == nil)
        #expect(quiet.poll(now: 1_300_000, hasRoom: true, lastDecrease: nil) == nil)
        #expect(quiet.state == .complete)
    }

    /// Sequence numbers unwrap across 65535 → 0; a packet never sent or overwritten has no slot.
    @Test func sentPacketHistory() {
        var history = SentPacketHistory(capacity: 64)
        #expect(history.extended(5) == nil)
        for sequence: UInt16 in [65_534, 65_535, 0, 1] {
            history.record(sequenceNumber: sequence, size: 100, sendTime: 0, probeCluster: 0)
        }
        guard let last = history.extended(65_535), let wrapped = history.extended(1) else {
            Issue.record("no extended sequence numbers")
            return
        }
        #expect(wrapped == last + 2)
        #expect(history.slot(for: wrapped) != nil)
        #expect(history.slot(for: wrapped + 1) == nil, "never sent")
        for sequence: UInt16 in 2..<70 {
            history.record(sequenceNumber: sequence, size: 70_000, sendTime: 0, probeCluster: 0)
        }
        #expect(history.slot(for: wrapped) == nil, "overwritten")
        if let slot = history.extended(69).flatMap(history.slot(for:)) {
            #expect(history[slot].size == 65_535, "sizes are clamped")
        }
        #expect(MemoryLayout<SentPacket>.stride == 24)
    }

    /// The minimum of a sliding window: newer values that are not lower are dropped on push.
    @Test func minimumWindow() {
        var window = MinimumWindow(capacity: 4)
        window.push(time: 0, value: 5)
        window.push(time: 1, value: 3)
        window.push(time: 2, value: 4)
        #expect(window.minimum == 3)
        window.dropOlder(than: 1)
        #expect(window.minimum == 4)
        var full = MinimumWindow(capacity: 2)
        for value in 1...3 { full.push(time: Int64(value), value: Double(value)) }
        #expect(full.minimum == 2)
        full.removeAll()
        #expect(full.minimum == nil)
    }

    /// Inconsistent settings are repaired rather than trusted.
    @Test func configurationIsSanitized() {
        let wild = BandwidthEstimatorConfiguration(
            minimumBitrate: -5, maximumBitrate: -10, startBitrate: .max, historyCapacity: 0,
            periodicProbeIntervalNanoseconds: 1).sanitized
        #expect(wild.minimumBitrate == 1_000)
        #expect(wild.maximumBitrate == 1_000)
        #expect(wild.startBitrate == 1_000)
        #expect(wild.historyCapacity == 64)
        #expect(wild.periodicProbeIntervalNanoseconds == 100_000_000)
        let odd = BandwidthEstimatorConfiguration(historyCapacity: 5_000).sanitized
        #expect(odd.historyCapacity == 8_192)
        #expect(BandwidthEstimatorConfiguration(historyCapacity: 1 << 40).sanitized.historyCapacity == 65_536)
    }
}
