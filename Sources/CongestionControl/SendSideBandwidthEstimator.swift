import ChorusCore
import RTCP

/// A send-side bandwidth estimator for one transport (one participant's connection): Google
/// Congestion Control as in draft-ietf-rmcat-gcc-02, with libwebrtc's goog_cc parameters. The
/// sender stamps every packet with its own transport-wide sequence number (the
/// draft-holmer-rmcat-transport-wide-cc-extensions-01 header extension) and the receiver
/// returns transport-cc feedback saying when each arrived. From that:
/// - the delay-based controller (`DelayBasedEstimator`) watches the queuing delay trend and runs
///   AIMD on the acknowledged bitrate;
/// - the loss-based controller (`LossBasedController`) watches the loss fraction;
/// - the target is the lower of the two, always within the configured range;
/// - probes (`ProbeController`, `ProbeBitrateEstimator`) find headroom faster than AIMD would.
///
/// Sans-IO and allocation-free per packet: nothing here reads a clock or sends anything.
/// The owner (the participant's transport, on its room's queue) drives it:
/// - `onPacketSent` for every RTP packet sent on the transport (media, RTX, padding), with the
///   probe cluster id when it was sent for one;
/// - `onFeedback` for every transport-cc feedback from that peer, `onRoundTripTime` for each RTT
///   measured from RTCP receiver reports;
/// - `probeRequest(at:)` on each pacing tick once media can flow (the first call starts the
///   initial probes): a cluster to send now, or nil;
/// - `estimate` whenever it allocates the bandwidth.
/// Whatever the input (hostile feedback, absurd times, time going backwards), the target stays
/// a finite value in the configured range; `statistics` counts what was set aside.
public struct SendSideBandwidthEstimator: Sendable {
    /// The configuration in force (sanitized).
    public let configuration: BandwidthEstimatorConfiguration
    public private(set) var statistics = BandwidthEstimatorStatistics()

    private let range: ClosedRange<Double>
    private var history: SentPacketHistory
    private var adapter = TransportFeedbackAdapter()
    private var delayBased: DelayBasedEstimator
    private var lossBased: LossBasedController
    private var acknowledged = AcknowledgedBitrateEstimator()
    private var probeEstimator = ProbeBitrateEstimator()
    private var probeController: ProbeController

    /// Probe results are not allowed to pull the estimate below this fraction of the
    /// acknowledged bitrate (libwebrtc's kProbeDropThroughputFraction).
    static let probeDropThroughputFraction = 0.85
    /// The longest RTT taken from RTCP, ns.
    static let maximumRoundTripTime: UInt64 = 10_000_000_000

    public init(configuration: BandwidthEstimatorConfiguration = BandwidthEstimatorConfiguration()) {
        let sane = configuration.sanitized
        self.configuration = sane
        range = Double(sane.minimumBitrate)...Double(sane.maximumBitrate)
        history = SentPacketHistory(capacity: sane.historyCapacity)
        delayBased = DelayBasedEstimator(range: range, start: Double(sane.startBitrate))
        lossBased = LossBasedController(range: range, start: Double(sane.startBitrate))
        probeController = ProbeController(configuration: sane)
    }

    /// Records a packet sent on the transport. `size` counts the bytes on the wire the sender
    /// accounts for (RTP header and payload at least); `probeClusterID` is the id of the
    /// `ProbeCluster` it was sent for, if any.
    public mutating func onPacketSent(
        transportSequenceNumber: UInt16, size: Int, at now: MediaTime, probeClusterID: Int? = nil
    ) {
        statistics.packetsSent += 1
        let cluster = probeClusterID.map { Int32(clamping: $0) } ?? 0
        history.record(
            sequenceNumber: transportSequenceNumber, size: size, sendTime: Self.microseconds(now),
            probeCluster: cluster)
    }

    /// Takes one transport-cc feedback received at `now`; returns the updated estimate.
    @discardableResult
    public mutating func onFeedback(_ feedback: TransportFeedback, at now: MediaTime) -> BandwidthEstimate {
        let time = Self.microseconds(now)
        let outcome = adapter.resolve(feedback, history: &history, now: time, statistics: &statistics)
        statistics.packetsAcknowledged += outcome.received
        statistics.packetsReportedLost += outcome.lost
        statistics.lossesRecovered += outcome.recovered
        if outcome.clockReset { delayBased.resetDetection() }
        lossBased.addPackets(
            lost: outcome.lost - outcome.recovered, expected: outcome.lost + outcome.received - outcome.recovered,
            now: time)
        measureAcknowledgedPackets()
        let fromProbe = delayBased.update(
            packets: adapter.packets[...], acknowledged: acknowledged.bitrate, probe: takeProbeResult(), now: time)
        if fromProbe {
            lossBased.setSendBitrate(delayBased.bitrate)
            acknowledged.expectFastRateChange()
        }
        lossBased.setDelayBasedLimit(delayBased.bitrate)
        lossBased.update(now: time)
        probeController.onEstimate(targetBitrate, hasRoom: hasRoomToProbe, now: time)
        return estimate
    }

    /// Takes a round-trip time measured from RTCP (an RR's LSR/DLSR), in ns; clamped to 10 s.
    public mutating func onRoundTripTime(_ nanoseconds: UInt64, at now: MediaTime) {
        let microseconds = Int64(min(nanoseconds, Self.maximumRoundTripTime) / 1_000)
        delayBased.setRoundTripTime(microseconds)
        lossBased.roundTripTime = microseconds
    }

    /// The probe cluster to send now, or nil. Each cluster is returned once; send them in the
    /// order returned, marking their packets with the cluster's id in `onPacketSent`.
    public mutating func probeRequest(at now: MediaTime) -> ProbeCluster? {
        let cluster = probeController.poll(
            now: Self.microseconds(now), hasRoom: hasRoomToProbe, lastDecrease: delayBased.lastDecrease)
        if cluster != nil { statistics.probeClustersRequested += 1 }
        return cluster
    }

    /// Asks for a probe at `bitrate` (bit/s, capped at the maximum), e.g. before moving a
    /// subscriber up a layer; the cluster comes out of `probeRequest(at:)`. Ignored at or under
    /// the current target or while another probe is under way. `probeFurther`: a result near
    /// the cluster's rate continues with exponential probing.
    public mutating func requestProbe(bitrate: Int, probeFurther: Bool = false, at now: MediaTime) {
        probeController.request(bitrate: Double(bitrate), probeFurther: probeFurther, now: Self.microseconds(now))
    }

    /// The current estimate: the target and, for diagnostics, how it came about.
    public var estimate: BandwidthEstimate {
        BandwidthEstimate(
            targetBitrate: Self.bits(targetBitrate), delayBasedBitrate: Self.bits(delayBased.bitrate),
            lossBasedBitrate: Self.bits(lossBased.bitrate), acknowledgedBitrate: acknowledged.bitrate.map(Self.bits),
            limitedBy: lossBased.bitrate < delayBased.bitrate ? .loss : .delay, usage: delayBased.usage,
            rateControlState: delayBased.rateControlState, isProbing: probeController.isProbing,
            lossFraction: lossBased.lossFraction)
    }

    /// min(delay-based, loss-based), within the configured range (both already are).
    private var targetBitrate: Double {
        let target = min(delayBased.bitrate, lossBased.bitrate)
        guard target.isFinite else { return range.lowerBound }
        return min(max(target, range.lowerBound), range.upperBound)
    }

    /// Probing makes sense: the queues are steady, the controller is not backing off and loss is low.
    private var hasRoomToProbe: Bool {
        delayBased.usage == .normal && delayBased.rateControlState != .decrease && !lossBased.isLossLimited
    }

    /// Feeds the acknowledged packets to the acknowledged-bitrate and probe estimators.
    private mutating func measureAcknowledgedPackets() {
        for packet in adapter.packets {
            acknowledged.add(arrivalTime: packet.arrivalTime, bytes: packet.size)
            guard packet.probeCluster != 0, let cluster = probeController.cluster(id: packet.probeCluster) else {
                continue
            }
            probeEstimator.add(packet, cluster: cluster)
        }
    }

    /// The probe result of this feedback, if any, kept from pulling the estimate far under the
    /// acknowledged bitrate.
    private mutating func takeProbeResult() -> Double? {
        guard let result = probeEstimator.takeResult() else { return nil }
        statistics.probeResults += 1
        guard let acknowledgedBitrate = acknowledged.bitrate else { return result }
        let floor = min(delayBased.bitrate, acknowledgedBitrate * Self.probeDropThroughputFraction)
        return max(result, floor)
    }

    /// A rate as a whole number of bit/s; the estimators keep theirs finite and in range, and
    /// the acknowledged rate (a measurement) is capped at 1 Pbit/s here.
    private static func bits(_ rate: Double) -> Int {
        guard rate.isFinite else { return 0 }
        return Int(min(max(rate, 0), 1e15))
    }

    private static func microseconds(_ time: MediaTime) -> Int64 {
        Int64(clamping: time.nanoseconds / 1_000)
    }
}
