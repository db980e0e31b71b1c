import ChorusCore

/// What the send-side estimator is configured with: the range every estimate stays in, where it
/// starts, how much send history it keeps and how it probes. Out-of-range values are repaired by
/// `sanitized` (a minimum above the maximum, a start outside the range, a zero history), so a
/// bad configuration never produces a bad estimate.
public struct BandwidthEstimatorConfiguration: Sendable, Equatable {
    /// The lowest target ever reported, bit/s.
    public var minimumBitrate: Int
    /// The highest target ever reported and the highest probe, bit/s.
    public var maximumBitrate: Int
    /// The target before any feedback has arrived, bit/s (libwebrtc starts at 300 kbit/s).
    public var startBitrate: Int
    /// Sent packets remembered for matching feedback, rounded up to a power of two (24 bytes each).
    /// At 1,200-byte packets, 4,096 entries cover 1 s at 40 Mbit/s and 10 s at 4 Mbit/s; a packet
    /// reported after it left the history counts as unknown.
    public var historyCapacity: Int
    /// Probe at 3× and 6× the start bitrate at the first `probeRequest(at:)` (libwebrtc's initial
    /// exponential probing), then at 2× each result while results keep reaching 70 % of the probe.
    public var initialProbing: Bool
    /// Probe at 2× the estimate this long after the last probe or decrease, while the link shows
    /// room (delay normal, loss under 2 %, estimate under the maximum); nil never probes
    /// periodically. libwebrtc's ALR probing uses 5 s.
    public var periodicProbeIntervalNanoseconds: UInt64?

    public init(
        minimumBitrate: Int = 30_000, maximumBitrate: Int = 50_000_000, startBitrate: Int = 300_000,
        historyCapacity: Int = 4_096, initialProbing: Bool = true,
        periodicProbeIntervalNanoseconds: UInt64? = 5_000_000_000
    ) {
        self.minimumBitrate = minimumBitrate
        self.maximumBitrate = maximumBitrate
        self.startBitrate = startBitrate
        self.historyCapacity = historyCapacity
        self.initialProbing = initialProbing
        self.periodicProbeIntervalNanoseconds = periodicProbeIntervalNanoseconds
    }

    /// The same configuration with its values made consistent: 1 kbit/s ≤ minimum ≤ maximum ≤
    /// 10 Gbit/s, the start inside that range, a history of 64…65,536 packets (a power of two),
    /// and a periodic interval of at least 100 ms.
    public var sanitized: BandwidthEstimatorConfiguration {
        var copy = self
        copy.minimumBitrate = min(max(minimumBitrate, 1_000), 10_000_000_000)
        copy.maximumBitrate = min(max(maximumBitrate, copy.minimumBitrate), 10_000_000_000)
        copy.startBitrate = min(max(startBitrate, copy.minimumBitrate), copy.maximumBitrate)
        var capacity = 64
        while capacity < historyCapacity && capacity < 65_536 { capacity *= 2 }
        copy.historyCapacity = capacity
        if let interval = periodicProbeIntervalNanoseconds {
            copy.periodicProbeIntervalNanoseconds = max(interval, 100_000_000)
        }
        return copy
    }
}

/// The delay-based detector's signal (draft-ietf-rmcat-gcc-02 §5.5): whether the queues on the
/// path are growing (over-use), draining (under-use) or steady.
public enum BandwidthUsage: Sendable, Equatable {
    case normal
    case overusing
    case underusing
}

/// The rate controller's state (draft §5.6): what it does with the next feedback.
public enum RateControlState: Sendable, Equatable {
    case hold
    case increase
    case decrease
}

/// Which controller set the target: the delay-based one (the queues) or the loss-based one.
public enum EstimateLimit: Sendable, Equatable {
    case delay
    case loss
}

/// The estimator's answer after each input: the target bitrate the sender should keep under,
/// and, for diagnostics, the two controllers' own estimates and states.
public struct BandwidthEstimate: Sendable, Equatable {
    /// What the sender may send, bit/s: min(delay-based, loss-based), within the configured range.
    public var targetBitrate: Int
    /// The delay-based (AIMD) estimate, bit/s.
    public var delayBasedBitrate: Int
    /// The loss-based estimate, bit/s.
    public var lossBasedBitrate: Int
    /// What the receiver acknowledged receiving lately, bit/s; nil before enough feedback.
    public var acknowledgedBitrate: Int?
    /// Which controller set `targetBitrate`.
    public var limitedBy: EstimateLimit
    public var usage: BandwidthUsage
    public var rateControlState: RateControlState
    /// A probe cluster was issued and its result is still awaited.
    public var isProbing: Bool
    /// The fraction of packets lost in the last loss window (at least 20 packets), 0…1.
    public var lossFraction: Double

    /// An estimate as another component states it (a member of a room whose connection knows
    /// its path some other way, a test).
    public init(targetBitrate: Int, delayBasedBitrate: Int? = nil, lossBasedBitrate: Int? = nil,
                acknowledgedBitrate: Int? = nil, limitedBy: EstimateLimit = .delay, usage: BandwidthUsage = .normal,
                rateControlState: RateControlState = .hold, isProbing: Bool = false, lossFraction: Double = 0) {
        self.targetBitrate = targetBitrate
        self.delayBasedBitrate = delayBasedBitrate ?? targetBitrate
        self.lossBasedBitrate = lossBasedBitrate ?? targetBitrate
        self.acknowledgedBitrate = acknowledgedBitrate
        self.limitedBy = limitedBy
        self.usage = usage
        self.rateControlState = rateControlState
        self.isProbing = isProbing
        self.lossFraction = lossFraction
    }
}

/// One probe the sender should send (libwebrtc's ProbeClusterConfig): packets marked with `id`
/// in `onPacketSent`, paced at `targetBitrate`, until at least `minimumBytes` and
/// `minimumPackets` have gone out. Padding or retransmissions of recent packets fill it when
/// there is not enough media; every packet sent while it runs should carry its id.
public struct ProbeCluster: Sendable, Equatable {
    public let id: Int
    public let targetBitrate: Int
    public let minimumBytes: Int
    public let minimumPackets: Int
    public let createdAt: MediaTime

    public init(id: Int, targetBitrate: Int, minimumBytes: Int, minimumPackets: Int, createdAt: MediaTime) {
        self.id = id
        self.targetBitrate = targetBitrate
        self.minimumBytes = minimumBytes
        self.minimumPackets = minimumPackets
        self.createdAt = createdAt
    }

    /// How long the cluster takes at its rate, ns (at least its bytes at `targetBitrate`).
    public var durationNanoseconds: UInt64 {
        UInt64(max(minimumBytes, 0)) * 8_000_000_000 / UInt64(max(targetBitrate, 1))
    }
}

/// Counters of what the estimator saw and set aside, for `/metrics` and tests.
public struct BandwidthEstimatorStatistics: Sendable, Equatable {
    public var packetsSent = 0
    public var feedbackPackets = 0
    /// Feedback packets missing by their feedback packet count.
    public var feedbackPacketsLost = 0
    /// Reports of packets never sent, or sent so long ago they left the history.
    public var unknownPacketReports = 0
    /// A packet reported received again.
    public var duplicatePacketReports = 0
    public var packetsAcknowledged = 0
    public var packetsReportedLost = 0
    /// Packets reported lost, then received after all.
    public var lossesRecovered = 0
    /// Arrival times set aside as absurd (more than 30 s from their feedback's reference time).
    public var absurdArrivalTimes = 0
    /// The receiver's clock was re-anchored because its feedback drifted from the sender's clock.
    public var arrivalClockResets = 0
    public var probeClustersRequested = 0
    public var probeResults = 0

    public init() {}
}
