import ChorusCore
import CongestionControl
import RTCP
import Testing

/// Feedback a peer should not send, or a network should not deliver: reports for packets never
/// sent, repeated and reordered feedback, wrapped sequence numbers, absurd deltas and reference
/// times, 10^4 packets in one message, random junk, time going backwards. Every feedback is
/// built as bytes and goes through the real parser. Whatever comes in, the estimate stays a
/// finite number in the configured range, and what was set aside is counted.
@Suite("Send-side estimator against hostile and damaged feedback")
struct HostileInputTests {
    private static func at(_ milliseconds: UInt64) -> MediaTime {
        MediaTime(nanoseconds: 1_000_000_000 + milliseconds * 1_000_000)
    }

    private static func feedback(
        base: UInt16, reports: [TransportFeedbackEncoder.Report], reference: Int64 = 1_000, count: UInt8 = 0
    ) -> TransportFeedback? {
        let bytes = TransportFeedbackEncoder.encode(
            baseSequenceNumber: base, referenceTime: reference, feedbackPacketCount: count, reports: reports)
        return try? TransportFeedback(parsing: bytes)
    }

    /// Sends `count` packets from `first`, 1 ms apart from `start` ms.
    private static func send(
        _ estimator: inout SendSideBandwidthEstimator, from first: UInt16, count: Int, start: UInt64 = 0
    ) {
        for index in 0..<count {
            estimator.onPacketSent(transportSequenceNumber: first &+ UInt16(truncatingIfNeeded: index), size: 1_200,
                                   at: at(start + UInt64(index)))
        }
    }

    /// What must hold after any input.
    private static func isSane(_ estimate: BandwidthEstimate, _ configuration: BandwidthEstimatorConfiguration) -> Bool {
        let range = configuration.minimumBitrate...configuration.maximumBitrate
        return range.contains(estimate.targetBitrate) && range.contains(estimate.delayBasedBitrate)
            && range.contains(estimate.lossBasedBitrate) && estimate.lossFraction.isFinite
            && (0...1).contains(estimate.lossFraction) && (estimate.acknowledgedBitrate ?? 0) >= 0
            && estimate.targetBitrate == min(estimate.delayBasedBitrate, estimate.lossBasedBitrate)
    }

    @Test func feedbackForPacketsNeverSent() throws {
        var estimator = SendSideBandwidthEstimator()
        let early = try #require(Self.feedback(base: 5, reports: Array(repeating: .received(delta: 4), count: 10)))
        estimator.onFeedback(early, at: Self.at(0))
        #expect(estimator.statistics.unknownPacketReports == 10, "nothing sent yet")
        Self.send(&estimator, from: 0, count: 100)
        let stray = try #require(Self.feedback(base: 30_000, reports: Array(repeating: .received(delta: 4), count: 50)))
        let estimate = estimator.onFeedback(stray, at: Self.at(200))
        #expect(estimator.statistics.unknownPacketReports == 60)
        #expect(estimator.statistics.packetsAcknowledged == 0)
        // Half known, half beyond the newest packet sent.
        let straddling = try #require(Self.feedback(base: 90, reports: Array(repeating: .received(delta: 4), count: 20)))
        estimator.onFeedback(straddling, at: Self.at(300))
        #expect(estimator.statistics.packetsAcknowledged == 10)
        #expect(estimator.statistics.unknownPacketReports == 70)
        #expect(estimate.targetBitrate == 300_000)
        #expect(Self.isSane(estimator.estimate, estimator.configuration))
    }

    /// A repeated feedback counts its packets once; a feedback older than the last (by its
    /// count) is not lost feedback; a jump in the count is; a loss later reported received is
    /// a recovery.
    @Test func repeatedReorderedAndLostFeedback() throws {
        var estimator = SendSideBandwidthEstimator()
        Self.send(&estimator, from: 0, count: 300)
        var first = Array(repeating: TransportFeedbackEncoder.Report.received(delta: 4), count: 100)
        first[10] = .lost
        let a = try #require(Self.feedback(base: 0, reports: first, count: 0))
        let b = try #require(Self.feedback(base: 100, reports: Array(repeating: .received(delta: 4), count: 100),
                                           reference: 1_002, count: 1))
        estimator.onFeedback(b, at: Self.at(400))
        estimator.onFeedback(a, at: Self.at(410))
        estimator.onFeedback(a, at: Self.at(420))
        #expect(estimator.statistics.packetsAcknowledged == 199)
        #expect(estimator.statistics.duplicatePacketReports == 99)
        #expect(estimator.statistics.packetsReportedLost == 1)
        #expect(estimator.statistics.feedbackPacketsLost == 0)
        let recovered = try #require(Self.feedback(base: 10, reports: [.received(delta: 4)], reference: 1_003, count: 5))
        estimator.onFeedback(recovered, at: Self.at(430))
        #expect(estimator.statistics.lossesRecovered == 1)
        #expect(estimator.statistics.packetsAcknowledged == 200)
        #expect(estimator.statistics.feedbackPacketsLost == 3, "counts 2, 3 and 4 never came")
        #expect(Self.isSane(estimator.estimate, estimator.configuration))
    }

    /// 3,000 packets across 65535 → 0, reported in feedbacks of 100 that straddle the wrap.
    @Test func wrappedSequenceNumbers() throws {
        var estimator = SendSideBandwidthEstimator()
        let first: UInt16 = 64_000
        for block in 0..<30 {
            Self.send(&estimator, from: first &+ UInt16(block * 100), count: 100, start: UInt64(block * 100))
            let base = first &+ UInt16(block * 100)
            let feedback = try #require(Self.feedback(
                base: base, reports: Array(repeating: .received(delta: 4), count: 100),
                reference: 1_000 + Int64(block) * 2, count: UInt8(block)))
            estimator.onFeedback(feedback, at: Self.at(UInt64(block * 100 + 150)))
        }
        #expect(estimator.statistics.packetsAcknowledged == 3_000)
        #expect(estimator.statistics.unknownPacketReports == 0)
        #expect(estimator.statistics.packetsReportedLost == 0)
        #expect(Self.isSane(estimator.estimate, estimator.configuration))
    }

    /// Deltas of up to ±8.2 s each and reference times anywhere in 24 bits: timing set aside or
    /// re-anchored, fates still counted, the estimate sane.
    @Test func absurdDeltasAndReferenceTimes() throws {
        var estimator = SendSideBandwidthEstimator()
        var random = SplitMix64(seed: 16)
        Self.send(&estimator, from: 0, count: 2_000)
        for block in 0..<20 {
            let reports = (0..<100).map { _ in
                TransportFeedbackEncoder.Report.received(delta: Int.random(in: -32_768...32_767, using: &random))
            }
            let reference = Int64.random(in: 0..<(1 << 24), using: &random)
            let feedback = try #require(Self.feedback(
                base: UInt16(block * 100), reports: reports, reference: reference, count: UInt8(block)))
            let estimate = estimator.onFeedback(feedback, at: Self.at(2_000 + UInt64(block) * 100))
            #expect(Self.isSane(estimate, estimator.configuration))
        }
        #expect(estimator.statistics.packetsAcknowledged == 2_000)
        #expect(estimator.statistics.absurdArrivalTimes > 0)
        #expect(estimator.statistics.arrivalClockResets > 0)
    }

    /// One feedback of 10^4 packets (every seventh lost, small and large deltas), and one of
    /// 65,535 statuses, mostly for packets never sent.
    @Test func tenThousandPacketFeedback() throws {
        var estimator = SendSideBandwidthEstimator(configuration: BandwidthEstimatorConfiguration(historyCapacity: 16_384))
        Self.send(&estimator, from: 100, count: 10_000)
        let reports = (0..<10_000).map { index -> TransportFeedbackEncoder.Report in
            if index % 7 == 3 { return .lost }
            return .received(delta: index % 11 == 0 ? 300 : 4)
        }
        let bytes = TransportFeedbackEncoder.encode(
            baseSequenceNumber: 100, referenceTime: 5, feedbackPacketCount: 0, reports: reports)
        let big = try TransportFeedback(parsing: bytes)
        #expect(big.packetStatusCount == 10_000)
        estimator.onFeedback(big, at: Self.at(10_100))
        #expect(estimator.statistics.packetsAcknowledged + estimator.statistics.packetsReportedLost == 10_000)
        #expect(estimator.statistics.packetsReportedLost == reports.filter { $0 == .lost }.count)
        let widest = try #require(Self.feedback(
            base: 0, reports: Array(repeating: .received(delta: 1), count: 65_535), reference: 6, count: 1))
        let estimate = estimator.onFeedback(widest, at: Self.at(10_200))
        #expect(estimator.statistics.unknownPacketReports == 65_535 - 10_000)
        #expect(Self.isSane(estimate, estimator.configuration))
    }

    /// Probe ids the estimator never issued are ordinary packets.
    @Test func unknownProbeClusterIDs() throws {
        var estimator = SendSideBandwidthEstimator()
        for index in 0..<50 {
            estimator.onPacketSent(transportSequenceNumber: UInt16(index), size: 1_200, at: Self.at(UInt64(index)),
                                   probeClusterID: index.isMultiple(of: 2) ? 999 : -1)
        }
        let feedback = try #require(Self.feedback(base: 0, reports: Array(repeating: .received(delta: 1), count: 50)))
        estimator.onFeedback(feedback, at: Self.at(100))
        #expect(estimator.statistics.probeResults == 0)
        #expect(estimator.statistics.packetsAcknowledged == 50)
    }

    /// A minimum equal to the maximum pins the estimate whatever happens.
    @Test func pinnedRange() throws {
        let configuration = BandwidthEstimatorConfiguration(minimumBitrate: 700_000, maximumBitrate: 700_000)
        var estimator = SendSideBandwidthEstimator(configuration: configuration)
        Self.send(&estimator, from: 0, count: 100)
        _ = estimator.probeRequest(at: Self.at(0))
        let feedback = try #require(Self.feedback(base: 0, reports: Array(repeating: .lost, count: 100)))
        #expect(estimator.onFeedback(feedback, at: Self.at(1_500)).targetBitrate == 700_000)
    }

    /// Thousands of random operations: packets of any size at times that may go backwards,
    /// feedback with random bases, statuses, deltas, reference times and counts, RTTs from 0 to
    /// UInt64.max, probe requests of any rate. The estimate is checked after every step.
    @Test(arguments: [UInt64(1), 2, 3])
    func randomInputsNeverBreakTheEstimate(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        let configuration = BandwidthEstimatorConfiguration(historyCapacity: 256)
        var estimator = SendSideBandwidthEstimator(configuration: configuration)
        var now: UInt64 = 1_000
        var sequence = UInt16.random(in: 0...UInt16.max, using: &random)
        var failures: [String] = []
        for step in 0..<3_000 {
            now = Self.nextTime(now, &random)
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<4:
                for _ in 0..<Int.random(in: 1...20, using: &random) {
                    let sizes = [Int.random(in: 0...1_500, using: &random), -1, Int.max, 70_000]
                    let cluster = Bool.random(using: &random) ? Int.random(in: -2...6, using: &random) : nil
                    estimator.onPacketSent(transportSequenceNumber: sequence, size: sizes.randomElement(using: &random) ?? 0,
                                           at: MediaTime(nanoseconds: now), probeClusterID: cluster)
                    sequence &+= 1
                }
            case 4..<8:
                if let feedback = Self.randomFeedback(near: sequence, &random) {
                    estimator.onFeedback(feedback, at: MediaTime(nanoseconds: now))
                }
            case 8:
                let rtts = [0, UInt64.max, UInt64.random(in: 0...2_000_000_000, using: &random)]
                estimator.onRoundTripTime(rtts.randomElement(using: &random) ?? 0, at: MediaTime(nanoseconds: now))
            default:
                _ = estimator.probeRequest(at: MediaTime(nanoseconds: now))
                estimator.requestProbe(bitrate: [Int.max, -5, Int.random(in: 0...100_000_000, using: &random)]
                    .randomElement(using: &random) ?? 0, at: MediaTime(nanoseconds: now))
            }
            if !Self.isSane(estimator.estimate, estimator.configuration), failures.count < 5 {
                failures.append("step \(step): \(estimator.estimate)")
            }
        }
        #expect(failures.isEmpty, "\(failures)")
        #expect(estimator.statistics.feedbackPackets > 500)
    }

    /// Mostly forward in ms steps, sometimes backwards, sometimes far ahead.
    private static func nextTime(_ now: UInt64, _ random: inout SplitMix64) -> UInt64 {
        switch Int.random(in: 0..<20, using: &random) {
        case 0: return now / 2
        case 1: return now &+ UInt64.random(in: 0...3_600_000_000_000, using: &random)
        default: return now &+ UInt64.random(in: 0...50_000_000, using: &random)
        }
    }

    private static func randomFeedback(near sequence: UInt16, _ random: inout SplitMix64) -> TransportFeedback? {
        let count = Int.random(in: 1...400, using: &random)
        let base = Bool.random(using: &random)
            ? sequence &- UInt16(truncatingIfNeeded: Int.random(in: 0...600, using: &random))
            : UInt16.random(in: 0...UInt16.max, using: &random)
        let reports = (0..<count).map { _ -> TransportFeedbackEncoder.Report in
            switch Int.random(in: 0..<4, using: &random) {
            case 0: return .lost
            case 1: return .received(delta: Int.random(in: -32_768...32_767, using: &random))
            default: return .received(delta: Int.random(in: 0...40, using: &random))
            }
        }
        let bytes = TransportFeedbackEncoder.encode(
            baseSequenceNumber: base, referenceTime: Int64.random(in: 0..<(1 << 24), using: &random),
            feedbackPacketCount: UInt8.random(in: 0...255, using: &random), reports: reports)
        return try? TransportFeedback(parsing: bytes)
    }
}
