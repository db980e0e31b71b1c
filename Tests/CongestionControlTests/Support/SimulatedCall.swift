import ChorusCore
import CongestionControl
import RTCP
import Testing

/// What a simulated call is made of: a bottleneck whose capacity may change over time, a
/// propagation delay each way, random loss from a seeded generator, and the sender's and
/// receiver's settings.
struct CallScenario {
    var duration = 30.0
    /// The bottleneck's capacity, bit/s, at a time in seconds from the start.
    var capacity: (Double) -> Double = { _ in 1_000_000 }
    var propagationDelayMilliseconds: UInt64 = 25
    var lossRate = 0.0
    var seed: UInt64 = 1
    /// The bottleneck's buffer, as queuing delay: a packet that would wait longer is dropped.
    var maximumQueueDelayMilliseconds: UInt64 = 300
    var packetSize = 1_200
    var feedbackIntervalMilliseconds: UInt64 = 100
    /// Close to the wrap, so every run crosses 65535 → 0 within its first second.
    var firstSequenceNumber: UInt16 = 65_000
    /// The receiver's clock, µs at the start; the default puts the 24-bit reference time
    /// (64 ms units) 5 s before its wrap.
    var receiverClockStart: Int64 = (1 << 24) * 64_000 - 5_000_000
    var configuration = BandwidthEstimatorConfiguration()
}

/// The estimate after each feedback.
struct EstimateSample {
    var time: Double
    var estimate: BandwidthEstimate
}

/// What a run produced.
struct CallTrace {
    var samples: [EstimateSample]
    var statistics: BandwidthEstimatorStatistics
    var probeClusters: [ProbeCluster]
    /// The longest a packet waited in the bottleneck's queue, ms.
    var maximumQueueDelay: Double

    /// The first sample time at or after `start` whose target satisfies `condition`.
    func firstTime(after start: Double, where condition: (Int) -> Bool) -> Double? {
        samples.first { $0.time >= start && condition($0.estimate.targetBitrate) }?.time
    }

    /// The targets sampled in [start, end), bit/s.
    func targets(from start: Double, to end: Double) -> [Double] {
        samples.filter { $0.time >= start && $0.time < end }.map { Double($0.estimate.targetBitrate) }
    }
}

/// A sender that sends at the estimator's target (1,200-byte packets, paced), sends probe
/// clusters when asked (every packet of a cluster marked, paced at its rate, in place of media),
/// a bottleneck queue, and a receiver that reports every 100 ms with transport-cc feedback
/// encoded to bytes and parsed back. Everything runs on one simulated clock, in event order.
struct SimulatedCall {
    private let scenario: CallScenario
    private var estimator: SendSideBandwidthEstimator
    private var rng: SplitMix64
    private var now: UInt64 = 1_000_000_000
    private var linkFreeAt: UInt64 = 0
    private var nextSequence: UInt64
    private var inFlight: [(sequence: UInt64, arrival: UInt64)] = []
    private var inFlightHead = 0
    private var arrived: [(sequence: UInt64, arrival: UInt64)] = []
    private var reportFrom: UInt64
    private var feedbackCount: UInt8 = 0
    private var feedbackInFlight: [(deliverAt: UInt64, bytes: [UInt8])] = []
    private var probe: (cluster: ProbeCluster, bytes: Int, packets: Int)?
    private var trace = CallTrace(samples: [], statistics: .init(), probeClusters: [], maximumQueueDelay: 0)

    init(_ scenario: CallScenario) {
        self.scenario = scenario
        estimator = SendSideBandwidthEstimator(configuration: scenario.configuration)
        rng = SplitMix64(seed: scenario.seed)
        nextSequence = UInt64(scenario.firstSequenceNumber)
        reportFrom = nextSequence
    }

    static func run(_ scenario: CallScenario) -> CallTrace {
        var call = SimulatedCall(scenario)
        return call.run()
    }

    private var start: UInt64 { 1_000_000_000 }
    private var seconds: Double { Double(now - start) / 1e9 }

    private mutating func run() -> CallTrace {
        let end = start + UInt64(scenario.duration * 1e9)
        var nextSend = now
        var nextFeedback = now + scenario.feedbackIntervalMilliseconds * 1_000_000
        var nextRoundTrip = now
        while now < end {
            now = min(nextSend, nextFeedback, inFlight.dropFirst(inFlightHead).first?.arrival ?? .max,
                      feedbackInFlight.first?.deliverAt ?? .max)
            deliverPackets()
            if now >= nextFeedback {
                sendFeedback()
                nextFeedback += scenario.feedbackIntervalMilliseconds * 1_000_000
            }
            deliverFeedback()
            if now >= nextRoundTrip {
                let roundTrip = 2 * scenario.propagationDelayMilliseconds * 1_000_000
                estimator.onRoundTripTime(roundTrip, at: MediaTime(nanoseconds: now))
                nextRoundTrip += 1_000_000_000
            }
            if now >= nextSend { nextSend = now + sendPacket() }
        }
        trace.statistics = estimator.statistics
        return trace
    }

    /// Sends one packet (probe or media); returns the pacing interval to the next, ns.
    private mutating func sendPacket() -> UInt64 {
        if probe == nil, let cluster = estimator.probeRequest(at: MediaTime(nanoseconds: now)) {
            probe = (cluster, 0, 0)
            trace.probeClusters.append(cluster)
        }
        let size = scenario.packetSize
        let rate: Int
        if var active = probe {
            estimator.onPacketSent(transportSequenceNumber: wire(nextSequence), size: size,
                                   at: MediaTime(nanoseconds: now), probeClusterID: active.cluster.id)
            active.bytes += size
            active.packets += 1
            rate = active.cluster.targetBitrate
            let done = active.bytes >= active.cluster.minimumBytes && active.packets >= active.cluster.minimumPackets
            probe = done ? nil : active
        } else {
            estimator.onPacketSent(transportSequenceNumber: wire(nextSequence), size: size, at: MediaTime(nanoseconds: now))
            rate = estimator.estimate.targetBitrate
        }
        enterLink(size: size)
        nextSequence += 1
        return UInt64(Double(size * 8) * 1e9 / Double(max(rate, 1)))
    }

    /// The bottleneck: random loss at its entrance, then a FIFO served at the capacity of the
    /// moment, dropping what would wait longer than its buffer allows.
    private mutating func enterLink(size: Int) {
        if scenario.lossRate > 0, Double.random(in: 0..<1, using: &rng) < scenario.lossRate { return }
        let begin = max(now, linkFreeAt)
        let wait = begin - now
        guard wait <= scenario.maximumQueueDelayMilliseconds * 1_000_000 else { return }
        trace.maximumQueueDelay = max(trace.maximumQueueDelay, Double(wait) / 1e6)
        let capacity = max(scenario.capacity(seconds), 1)
        linkFreeAt = begin + UInt64(Double(size * 8) * 1e9 / capacity)
        inFlight.append((nextSequence, linkFreeAt + scenario.propagationDelayMilliseconds * 1_000_000))
    }

    private mutating func deliverPackets() {
        while inFlightHead < inFlight.count, inFlight[inFlightHead].arrival <= now {
            arrived.append(inFlight[inFlightHead])
            inFlightHead += 1
        }
        if inFlightHead > 4_096 {
            inFlight.removeFirst(inFlightHead)
            inFlightHead = 0
        }
    }

    /// The receiver's report of everything from the last report's end to the newest arrival.
    private mutating func sendFeedback() {
        guard let newest = arrived.last?.sequence, newest >= reportFrom else { return }
        var arrivals = [Int64?](repeating: nil, count: Int(newest - reportFrom + 1))
        for packet in arrived where packet.sequence >= reportFrom {
            arrivals[Int(packet.sequence - reportFrom)] = receiverClock(packet.arrival)
        }
        let bytes = TransportFeedbackEncoder.encode(
            baseSequenceNumber: wire(reportFrom), arrivals: arrivals, feedbackPacketCount: feedbackCount)
        feedbackCount &+= 1
        feedbackInFlight.append((now + scenario.propagationDelayMilliseconds * 1_000_000, bytes))
        reportFrom = newest + 1
        arrived.removeAll(keepingCapacity: true)
    }

    private mutating func deliverFeedback() {
        while let first = feedbackInFlight.first, first.deliverAt <= now {
            feedbackInFlight.removeFirst()
            guard let feedback = try? TransportFeedback(parsing: first.bytes) else {
                Issue.record("the encoder produced feedback the parser refuses")
                continue
            }
            let estimate = estimator.onFeedback(feedback, at: MediaTime(nanoseconds: now))
            trace.samples.append(EstimateSample(time: seconds, estimate: estimate))
        }
    }

    private func receiverClock(_ time: UInt64) -> Int64 {
        scenario.receiverClockStart + Int64((time - start) / 1_000)
    }

    private func wire(_ sequence: UInt64) -> UInt16 { UInt16(truncatingIfNeeded: sequence) }
}
