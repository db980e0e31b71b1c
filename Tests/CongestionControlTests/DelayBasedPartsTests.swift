import Testing

@testable import CongestionControl

/// The delay-based parts one by one, against hand-computed expectations: packet grouping, the
/// trendline, the over-use detector and its adaptive threshold, and the AIMD rate controller.
@Suite("Delay-based parts: grouping, trendline, over-use detector, AIMD")
struct DelayBasedPartsTests {
    /// Packets 10 ms apart each form a group; the deltas come one group late.
    @Test func groupsPacketsSentWithinFiveMilliseconds() {
        var groups = InterArrival()
        var deltas: [InterArrival.Deltas] = []
        for index in 0..<6 {
            let send = Int64(index) * 10_000
            // Two packets per group, 1 ms apart; the queue adds 2 ms per group.
            for offset in [Int64(0), 1_000] {
                let arrival = 50_000 + send + offset + Int64(index) * 2_000
                if let found = groups.add(sendTime: send + offset, arrivalTime: arrival, feedbackTime: 0) {
                    deltas.append(found)
                }
            }
        }
        #expect(deltas == Array(repeating: InterArrival.Deltas(send: 10, arrival: 12), count: 4))
    }

    /// A packet sent after the group's 5 ms that arrives within 5 ms of the last one and sooner
    /// than it was sent after it (a burst the network delivered at once) joins the group.
    @Test func burstsJoinTheGroup() {
        var groups = InterArrival()
        #expect(groups.add(sendTime: 0, arrivalTime: 100_000, feedbackTime: 0) == nil)
        #expect(groups.add(sendTime: 20_000, arrivalTime: 130_000, feedbackTime: 0) == nil)  // new group
        // Sent 10 ms later but arriving 1 ms later: a burst, same group.
        #expect(groups.add(sendTime: 30_000, arrivalTime: 131_000, feedbackTime: 0) == nil)
        let deltas = groups.add(sendTime: 40_000, arrivalTime: 150_000, feedbackTime: 0)
        #expect(deltas == InterArrival.Deltas(send: 30, arrival: 31))
    }

    /// A receiver clock that jumps by more than 3 s between groups reported by feedback 100 ms
    /// apart resets the grouping instead of producing a 3 s delay variation.
    @Test func clockJumpsReset() {
        var groups = InterArrival()
        for index in 0..<3 {
            _ = groups.add(sendTime: Int64(index) * 10_000, arrivalTime: Int64(index) * 10_000, feedbackTime: 0)
        }
        #expect(groups.add(sendTime: 30_000, arrivalTime: 5_030_000, feedbackTime: 100_000) != nil)
        #expect(groups.add(sendTime: 40_000, arrivalTime: 5_040_000, feedbackTime: 100_000) == nil)
        #expect(groups.resets == 1)
    }

    /// A group that completed before its predecessor did (its last packet arrived earlier) is
    /// dropped; the third such in a row resets the grouping. Packets sent before the current
    /// group are skipped.
    @Test func reorderedGroupsReset() {
        var groups = InterArrival()
        _ = groups.add(sendTime: -20_000, arrivalTime: 480_000, feedbackTime: 0)
        _ = groups.add(sendTime: 0, arrivalTime: 500_000, feedbackTime: 0)
        _ = groups.add(sendTime: 1_000, arrivalTime: 700_000, feedbackTime: 0)  // late: the group ends at 700
        #expect(groups.add(sendTime: 10_000, arrivalTime: 610_000, feedbackTime: 0) != nil)
        for send in [Int64(20_000), 30_000, 40_000] {
            #expect(groups.add(sendTime: send, arrivalTime: 600_000 + send, feedbackTime: 0) == nil)
        }
        #expect(groups.resets == 1)
        #expect(groups.add(sendTime: -1, arrivalTime: 0, feedbackTime: 0) == nil)
        #expect(groups.add(sendTime: -2, arrivalTime: 0, feedbackTime: 0) == nil, "sent before the group")
    }

    /// A queue growing 1 ms per 10 ms group: the smoothed delay rises about 0.1 ms per ms.
    @Test func trendlineFollowsAGrowingQueue() {
        var trendline = TrendlineEstimator()
        for index in 1...60 {
            trendline.update(InterArrival.Deltas(send: 10, arrival: 11), arrivalTime: Int64(index) * 11_000)
        }
        #expect(abs(trendline.trend - 1.0 / 11) < 0.01)
        #expect(trendline.modifiedTrend == 60 * trendline.trend * 4)
        var steady = TrendlineEstimator()
        for index in 1...40 {
            steady.update(InterArrival.Deltas(send: 10, arrival: index.isMultiple(of: 2) ? 11 : 9),
                          arrivalTime: Int64(index) * 10_000)
        }
        #expect(abs(steady.trend) < 0.01)
        // Under 20 points there is no fit yet.
        var short = TrendlineEstimator()
        for index in 1..<20 {
            short.update(InterArrival.Deltas(send: 10, arrival: 11), arrivalTime: Int64(index) * 11_000)
        }
        #expect(short.trend == 0)
    }

    /// Over-use needs more than 10 ms and two samples above γ with a trend that is not falling;
    /// under −γ is under-use at once.
    @Test func overuseDetectorSignals() {
        var detector = OveruseDetector()
        #expect(detector.detect(modifiedTrend: 20, trend: 0.1, numberOfDeltas: 10, sendDelta: 5, now: 0) == .normal)
        // 2.5 ms + 5 ms: not yet over 10 ms.
        #expect(detector.detect(modifiedTrend: 20, trend: 0.1, numberOfDeltas: 11, sendDelta: 5, now: 5) == .normal)
        #expect(detector.detect(modifiedTrend: 20, trend: 0.1, numberOfDeltas: 12, sendDelta: 5, now: 10) == .overusing)
        #expect(detector.detect(modifiedTrend: -20, trend: -0.1, numberOfDeltas: 13, sendDelta: 5, now: 15) == .underusing)
        #expect(detector.detect(modifiedTrend: 0, trend: 0, numberOfDeltas: 14, sendDelta: 5, now: 20) == .normal)
        var falling = OveruseDetector()
        for (index, trend) in [0.3, 0.2, 0.1, 0.05].enumerated() {
            let usage = falling.detect(modifiedTrend: 30, trend: trend, numberOfDeltas: 10, sendDelta: 10,
                                       now: Double(index) * 10)
            #expect(usage == .normal, "a falling trend is not over-use")
        }
        #expect(falling.detect(modifiedTrend: 30, trend: 0.1, numberOfDeltas: 1, sendDelta: 10, now: 50) == .normal)
    }

    /// γ moves towards |m| at k_up (above) and k_down (below) per ms, capped 100 ms per step,
    /// within 6…600 ms; spikes more than 15 ms above γ leave it alone.
    @Test func adaptiveThreshold() {
        var detector = OveruseDetector()
        detector.detect(modifiedTrend: 0, trend: 0, numberOfDeltas: 5, sendDelta: 5, now: 0)
        detector.detect(modifiedTrend: 20, trend: 0, numberOfDeltas: 5, sendDelta: 5, now: 100)
        #expect(detector.threshold == 12.5 + 0.0087 * (20 - 12.5) * 100)
        let before = detector.threshold
        detector.detect(modifiedTrend: 500, trend: 0, numberOfDeltas: 5, sendDelta: 5, now: 200)
        #expect(detector.threshold == before, "a spike far above γ does not move it")
        var rising = OveruseDetector()
        for step in 0..<10_000 {
            rising.detect(modifiedTrend: Double(step), trend: 0, numberOfDeltas: 5, sendDelta: 5, now: Double(step) * 100)
        }
        #expect(rising.threshold == 600)
    }

    /// Over-use: 0.85 × the acknowledged bitrate, then hold. Normal without a capacity estimate:
    /// up to 8 %/s. After an over-use: additive, a few kbit/s per second. Never above
    /// 1.5 × throughput + 10 kbit/s.
    @Test func aimdRateControl() {
        var rate = AimdRateController(range: 30_000...50_000_000, start: 1_000_000)
        rate.roundTripTime = 100_000
        rate.update(usage: .normal, throughput: 1_000_000, now: 0)
        #expect(rate.bitrate == 1_001_000, "at least 1 kbit/s per increase")
        rate.update(usage: .normal, throughput: 1_000_000, now: 1_000_000)
        #expect(abs(rate.bitrate - 1_001_000 * 1.08) < 1)
        rate.update(usage: .overusing, throughput: 900_000, now: 1_100_000)
        #expect(rate.bitrate == 0.85 * 900_000)
        #expect(rate.state == .hold)
        #expect(rate.lastDecrease == 1_100_000)
        let decreased = rate.bitrate
        rate.update(usage: .normal, throughput: 765_000, now: 1_200_000)
        rate.update(usage: .normal, throughput: 765_000, now: 2_200_000)
        // Additive near the capacity found: 765 kbit/s is 3,188 B per frame in 3 packets of
        // 1,063 B; one per 2 × (100 + 100) ms is 21.3 kbit/s per second.
        #expect(abs(rate.bitrate - (decreased + 21_250)) < 1)
        var limited = AimdRateController(range: 30_000...50_000_000, start: 1_000_000)
        limited.update(usage: .normal, throughput: 100_000, now: 0)
        limited.update(usage: .normal, throughput: 100_000, now: 1_000_000)
        #expect(limited.bitrate == 1_000_000, "above 1.5 × throughput + 10 kbit/s: no increase")
        #expect(limited.timeToReduceFurther(now: 1_000_000, throughput: 400_000))
    }
}
