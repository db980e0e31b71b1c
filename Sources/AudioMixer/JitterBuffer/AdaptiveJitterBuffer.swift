import ChorusCore

/// The receive-side jitter buffer of one sending participant: a sans-IO value that takes RTP
/// packets as they arrive and, each time its owner needs the next stretch of audio, says what
/// to play — the due packet, an FEC recovery, concealment, or silence.
///
/// **Driving it.** On the room's queue, call `insert(…)` for every audio RTP packet (with the
/// time it arrived) and `pop(now:)` once per packet's worth of playout: for 20 ms packets that
/// is once per 20 ms mixer tick. `now` is the time the first sample of the returned audio will
/// be played; a decoder stage that buffers PCM across ticks (packets of 10, 40 or 60 ms) passes
/// `tick time + already-buffered samples`, which `JitterBufferedDecoder` does. The buffer never
/// reads a clock, so tests drive it on a simulated one.
///
/// **How it decides.** Packets are held in order of their unwrapped sequence numbers. A playout
/// cursor walks the sender's RTP timeline; a packet is played when the cursor reaches its
/// timestamp. The distance between the cursor and the fastest recent arrivals is the playout
/// delay; it is steered towards a target computed from measured jitter (`JitterEstimator`,
/// 20…200 ms by default) by dropping or inserting whole frames — preferably by lengthening or
/// shortening silence, where that is inaudible. The same steering absorbs clock drift, so the
/// buffer stays bounded however fast or slow the sender's clock runs.
///
/// **Peer input.** Duplicates, late packets and packets too old to place are counted and
/// dropped; sequence or timestamp jumps resynchronize; nothing a sender does can trap or grow
/// memory past `configuration.capacity` packets.
public struct AdaptiveJitterBuffer: Sendable {
    /// Where playout stands. `idle` follows a stall or DTX and restarts like `notStarted`
    /// (re-anchoring the delay at the next talkspurt), but reports silence while waiting.
    enum Phase: Equatable, Sendable {
        case notStarted
        case playing
        case idle(dtx: Bool)
    }

    public let configuration: JitterBufferConfiguration
    public internal(set) var statistics = JitterBufferStatistics()

    // The rest is internal only so that the playout half can live in its own file.
    var ring: JitterPacketRing
    var estimator: JitterEstimator
    var sequenceUnwrapper = SequenceNumberUnwrapper()
    var timestampUnwrapper = TimestampUnwrapper()
    var phase = Phase.notStarted
    /// Origin of the timeline: extended timestamp and arrival (ns) of the first packet after the
    /// last (re)synchronization, so that 64-bit arithmetic stays far from overflow.
    var originTimestamp: Int64 = 0
    var originArrival: Int64 = 0
    var hasOrigin = false
    /// Next sequence number to play; below it, packets are late or duplicates.
    var nextSequence: UInt64 = 0
    /// Extended RTP timestamp that the next pop plays.
    var cursor: Int64 = 0
    /// Duration of one packet in samples, from the owner or from timestamp differences.
    var packetSamples: Int
    /// A longer timestamp step seen once, waiting for confirmation (see `learnPacketDuration`).
    var longerStepCandidate = 0
    var lastPlayedWasDTX = false
    /// Samples concealed in a row; past `maximumConcealmentMs` the buffer reports silence.
    var concealedRun = 0
    /// Low-pass filtered playout delay (ns) that the steering compares with `targetDelay`.
    var filteredDelay: Int64 = 0
    var targetDelay: Int64
    /// Pops to wait before the next audible (in-speech) delay adjustment.
    var cooldown = 0
    /// Exponential average of the share of packets lost (for the FEC-friendly target floor).
    var lossAverage = 0.0
    var recordedPackets = 0
    /// Consecutive packets rejected as late/stale: a sender that restarted its sequence space.
    var rejectedRun = 0
    var delaySum = 0.0
    var delayCount = 0
    var hasPlayed = false
    /// Set by the owner after decoding: the sender's audio is quiet now (near silence), so a
    /// frame can be dropped inaudibly to shed excess delay.
    public var sourceIsQuiet = false

    public init(configuration: JitterBufferConfiguration = JitterBufferConfiguration()) {
        var configuration = configuration
        configuration.clockRate = max(configuration.clockRate, 1_000)
        configuration.tickSamples = max(configuration.tickSamples, 1)
        configuration.defaultPacketSamples = max(configuration.defaultPacketSamples, 1)
        configuration.minimumTargetMs = max(configuration.minimumTargetMs, 0)
        configuration.maximumTargetMs = max(configuration.maximumTargetMs, configuration.minimumTargetMs)
        self.configuration = configuration
        ring = JitterPacketRing(capacity: configuration.capacity)
        estimator = JitterEstimator(
            quantile: configuration.jitterQuantile, halfLifePackets: configuration.jitterHalfLifePackets)
        packetSamples = configuration.defaultPacketSamples
        targetDelay = Int64(configuration.initialTargetMs) * 1_000_000
        statistics.currentTargetMs = Double(configuration.initialTargetMs)
    }

    /// Packets waiting to be played.
    public var bufferedPackets: Int { ring.count }
    /// The playout delay the buffer steers towards, in milliseconds.
    public var targetDelayMs: Double { Double(targetDelay) / 1e6 }
    /// Whether a talkspurt is being played (false before the first packet and while idle).
    public var isPlaying: Bool { phase == .playing }

    /// Forgets everything (e.g. the sender's SSRC changed) except the statistics.
    public mutating func reset() {
        let kept = statistics
        self = AdaptiveJitterBuffer(configuration: configuration)
        statistics = kept
    }

    // MARK: - Insert

    /// Takes one received RTP packet. `marker` is the RTP marker bit (first packet of a
    /// talkspurt after DTX, RFC 7587 §4.2); `samples` is the packet's duration when the owner
    /// knows it (e.g. from the Opus TOC byte), otherwise timestamp differences are used.
    public mutating func insert(
        sequenceNumber: UInt16, timestamp: UInt32, payload: [UInt8], arrival: MediaTime,
        marker: Bool = false, samples: Int? = nil
    ) {
        statistics.packetsReceived += 1
        let arrivalNs = Int64(clamping: arrival.nanoseconds)
        var sequence = sequenceUnwrapper.unwrap(sequenceNumber)
        var timestamp64 = Int64(truncatingIfNeeded: timestampUnwrapper.unwrap(timestamp))
        if !hasOrigin { synchronize(sequence: sequence, timestamp: timestamp64, arrival: arrivalNs) }

        switch classify(sequence: sequence, timestamp: timestamp64) {
        case .duplicate:
            statistics.duplicates += 1
            statistics.discarded += 1
            return
        case .stale:
            statistics.discarded += 1
            if rejected(sequenceNumber, timestamp, &sequence, &timestamp64, arrivalNs) { break }
            return
        case .late:
            statistics.late += 1
            recordJitter(timestamp: timestamp64, arrival: arrivalNs)
            dropLate(sequence)
            if rejected(sequenceNumber, timestamp, &sequence, &timestamp64, arrivalNs) { break }
            return
        case .resynchronize:
            resynchronize(sequence: sequence, timestamp: timestamp64, arrival: arrivalNs)
        case .accept:
            break
        }
        rejectedRun = 0
        store(sequence: sequence, timestamp: timestamp64, payload: payload, arrival: arrivalNs,
              marker: marker, samples: samples)
    }

    /// What `insert` does with a packet: store it, count and drop it, or start over with it.
    enum Verdict { case accept, duplicate, late, stale, resynchronize }

    /// Where a packet belongs, relative to what was already played.
    func classify(sequence: UInt64, timestamp: Int64) -> Verdict {
        let capacity = UInt64(ring.capacity)
        if sequence < nextSequence {
            if phase == .notStarted, ring.highest.map({ $0 >= sequence && $0 - sequence < capacity }) ?? true {
                return .accept  // reordered ahead of the first packet: playout has not begun
            }
            if nextSequence - sequence >= capacity { return .stale }
            return ring.wasSeen(sequence) ? .duplicate : .late
        }
        if ring.buffered(sequence) != nil { return .duplicate }
        if sequence - nextSequence >= capacity { return .resynchronize }
        guard phase == .playing else { return .accept }
        let limit = samples(fromMilliseconds: configuration.resynchronizeAfterMs)
        if cursor &- timestamp > limit || timestamp &- cursor > limit &+ samples(fromMilliseconds: configuration.maximumTargetMs) {
            return .resynchronize
        }
        // Its time has passed: the cursor is beyond it by more than half a packet.
        if timestamp &+ Int64(packetSamples / 2) < cursor { return .late }
        return .accept
    }

    /// A late packet with a sequence number not yet played: playout concealed its slot, so
    /// it and any missing ones before it are lost, and playout continues after it.
    private mutating func dropLate(_ sequence: UInt64) {
        guard sequence >= nextSequence else {
            ring.remember(sequence)  // a second copy will count as a duplicate
            return
        }
        if let first = ring.firstBuffered(from: nextSequence), first < sequence { return }
        countLost(Int(truncatingIfNeeded: min(sequence - nextSequence, UInt64(ring.capacity))) + 1)
        nextSequence = sequence + 1
        ring.remember(sequence)
    }

    /// Counts a rejection; after 16 in a row the sender has evidently restarted its sequence
    /// or timestamp space (without a new SSRC): start over with this packet. Returns whether
    /// the packet should now be stored.
    private mutating func rejected(
        _ wireSequence: UInt16, _ wireTimestamp: UInt32, _ sequence: inout UInt64,
        _ timestamp: inout Int64, _ arrival: Int64
    ) -> Bool {
        rejectedRun += 1
        guard rejectedRun >= 16 else { return false }
        sequenceUnwrapper.reset()
        timestampUnwrapper.reset()
        sequence = sequenceUnwrapper.unwrap(wireSequence)
        timestamp = Int64(truncatingIfNeeded: timestampUnwrapper.unwrap(wireTimestamp))
        resynchronize(sequence: sequence, timestamp: timestamp, arrival: arrival)
        return true
    }

    private mutating func store(
        sequence: UInt64, timestamp: Int64, payload: [UInt8], arrival: Int64, marker: Bool, samples: Int?
    ) {
        let known = samples.flatMap { (1...AudioCodecFormat.maxPacketSamples).contains($0) ? $0 : nil } ?? 0
        ring.store(JitterPacketRing.Slot(
            sequence: sequence, timestamp: timestamp, samples: known, marker: marker,
            arrival: arrival, payload: payload))
        if phase == .notStarted, sequence < nextSequence { nextSequence = sequence }
        learnPacketDuration(sequence: sequence, timestamp: timestamp, known: known)
        recordJitter(timestamp: timestamp, arrival: arrival)
    }

    /// Packet duration: the owner's word first, else the timestamp step between neighbours.
    /// A longer step is believed only when seen twice in a row: a single one is more likely a
    /// frame of DTX between two packets than a change of packet duration.
    private mutating func learnPacketDuration(sequence: UInt64, timestamp: Int64, known: Int) {
        if known > 0 { packetSamples = known; return }
        let range = Int64(AudioCodecFormat.minimumFrameSamples)...Int64(AudioCodecFormat.maxPacketSamples)
        var step: Int64?
        if let previous = ring.buffered(sequence &- 1), range.contains(timestamp &- previous.timestamp) {
            step = timestamp &- previous.timestamp
        } else if let next = ring.buffered(sequence + 1), range.contains(next.timestamp &- timestamp) {
            step = next.timestamp &- timestamp
        }
        guard let step else { return }
        if step <= Int64(packetSamples) || step == Int64(longerStepCandidate) {
            packetSamples = Int(step)
            longerStepCandidate = 0
        } else {
            longerStepCandidate = Int(step)
        }
    }

    // MARK: - Timeline and jitter

    private mutating func recordJitter(timestamp: Int64, arrival: Int64) {
        let relative = relativeDelay(timestamp: timestamp, arrival: arrival)
        // A jump this large is a new timeline (sender paused its clock, or restarted), not
        // jitter: measuring it would push the target to its maximum for nothing.
        if let base = estimator.baseDelay,
           (relative &- base).magnitude > UInt64(configuration.resynchronizeAfterMs.magnitude) &* 1_000_000 {
            estimator.rebase()
        }
        estimator.record(relativeDelay: relative, arrival: arrival)
        recordedPackets += 1
        updateTarget()
    }

    mutating func updateTarget() {
        var floor = Int64(configuration.minimumTargetMs) * 1_000_000
        if configuration.inbandFEC, lossAverage > 0.01 {
            // Two packets of delay keep the packet after a loss (with its FEC) usually in hand.
            floor = max(floor, 2 * nanoseconds(fromSamples: Int64(packetSamples)))
        }
        let ceiling = Int64(configuration.maximumTargetMs) * 1_000_000
        var wanted = estimator.jitterQuantile + Int64(configuration.safetyMarginMs) * 1_000_000
        if recordedPackets < 50 { wanted = max(wanted, Int64(configuration.initialTargetMs) * 1_000_000) }
        targetDelay = min(max(wanted, floor), max(ceiling, floor))
    }

    /// `arrival − send time` on the origin's timeline, in ns; only differences matter.
    func relativeDelay(timestamp: Int64, arrival: Int64) -> Int64 {
        (arrival &- originArrival) &- nanoseconds(fromSamples: timestamp &- originTimestamp)
    }

    /// When a packet with this timestamp would arrive over the fastest recent path.
    func baseArrival(ofTimestamp timestamp: Int64) -> Int64 {
        originArrival &+ nanoseconds(fromSamples: timestamp &- originTimestamp) &+ (estimator.baseDelay ?? 0)
    }

    func nanoseconds(fromSamples samples: Int64) -> Int64 {
        samples &* 1_000_000_000 / Int64(configuration.clockRate)
    }

    func samples(fromMilliseconds ms: Int) -> Int64 {
        Int64(ms) &* Int64(configuration.clockRate) / 1_000
    }

    /// Starts a new timeline at this packet: the first packet ever, or after a jump.
    mutating func synchronize(sequence: UInt64, timestamp: Int64, arrival: Int64) {
        hasOrigin = true
        originTimestamp = timestamp
        originArrival = arrival
        nextSequence = sequence
        cursor = timestamp
    }

    /// Throws away what is buffered and waits for this packet's timeline to build up the target
    /// delay again (reporting silence meanwhile).
    mutating func resynchronize(sequence: UInt64, timestamp: Int64, arrival: Int64) {
        statistics.discarded += ring.flush()
        statistics.resyncs += 1
        estimator.rebase()
        synchronize(sequence: sequence, timestamp: timestamp, arrival: arrival)
        phase = hasPlayed ? .idle(dtx: false) : .notStarted
        lastPlayedWasDTX = false
        concealedRun = 0
    }

    mutating func countLost(_ count: Int) {
        guard count > 0 else { return }
        statistics.lost += count
        for _ in 0..<min(count, 100) { lossAverage = lossAverage * 0.99 + 0.01 }
    }
}
