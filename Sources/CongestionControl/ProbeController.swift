import ChorusCore

/// Decides when to probe for more bandwidth, and how hard (libwebrtc's ProbeController, with its
/// published parameters). Probes are short clusters (≥ 15 ms and ≥ 5 packets) sent above the
/// current estimate; `ProbeBitrateEstimator` turns their feedback into a rate the delay-based
/// controller jumps to.
/// - At start, exponential probing: clusters at 3× and 6× the start bitrate; then, while a
///   result exceeds 70 % of the last cluster's rate, another at 2× that result. A result that
///   does not come within 1 s ends the series.
/// - Afterwards, periodic probing at 2× the estimate, an interval after the last probe or
///   delay-based decrease, and only while the link has room to find (the caller says so: the
///   delay detector normal and loss under 2 %) and the estimate is under the maximum.
/// - On request (`request`), one cluster at a given rate, e.g. when the layer allocator wants to
///   know if a higher layer fits.
/// Every probe is capped at the configured maximum; a capped probe does not probe further.
///
/// Driven by `SendSideBandwidthEstimator`: `poll` from `probeRequest(at:)`, `onEstimate` after each
/// feedback. Issued clusters are remembered (the last eight) so probe packets can be matched.
struct ProbeController: Sendable {
    /// Before the first poll; while a series of probes awaits results; between series.
    enum State: Sendable {
        case initial
        case waitingForResult
        case complete
    }

    static let firstExponentialScale = 3.0
    static let secondExponentialScale = 6.0
    static let furtherScale = 2.0
    static let furtherThreshold = 0.7
    static let periodicScale = 2.0
    static let resultTimeout: Int64 = 1_000_000
    static let minimumDuration: Int64 = 15_000
    static let minimumPackets = 5
    static let remembered = 8

    let range: ClosedRange<Double>
    let startBitrate: Double
    let initialProbing: Bool
    /// µs; nil: no periodic probing.
    let periodicInterval: Int64?
    private(set) var state = State.initial
    private var pending: [ProbeCluster] = []
    private var issued: [ProbeCluster] = []
    private var nextID: Int32 = 1
    private var minimumToProbeFurther = Double.infinity
    private var lastProbe: Int64?
    private var firstPoll: Int64?
    private var estimate: Double

    init(configuration: BandwidthEstimatorConfiguration) {
        range = Double(configuration.minimumBitrate)...Double(configuration.maximumBitrate)
        startBitrate = Double(configuration.startBitrate)
        initialProbing = configuration.initialProbing
        periodicInterval = configuration.periodicProbeIntervalNanoseconds.map { Int64(clamping: $0 / 1_000) }
        estimate = startBitrate
        pending.reserveCapacity(4)
        issued.reserveCapacity(Self.remembered)
    }

    /// A cluster was issued and its result is still awaited (or it is still to be sent).
    var isProbing: Bool { state == .waitingForResult || !pending.isEmpty }

    /// The issued cluster with this id, if it is one of the last eight.
    func cluster(id: Int32) -> ProbeCluster? {
        issued.first { $0.id == Int(id) }
    }

    /// The next cluster to send, once each. `hasRoom`: nothing says the link is full now;
    /// `lastDecrease`: the delay-based controller's last decrease, µs.
    mutating func poll(now: Int64, hasRoom: Bool, lastDecrease: Int64?) -> ProbeCluster? {
        let start = firstPoll ?? now
        firstPoll = start
        if state == .waitingForResult, let lastProbe, now - lastProbe > Self.resultTimeout {
            complete()
        }
        if state == .initial {
            if initialProbing {
                initiate([Self.firstExponentialScale * startBitrate, Self.secondExponentialScale * startBitrate],
                         probeFurther: true, now: now)
            } else {
                complete()
            }
        } else if state == .complete, pending.isEmpty, hasRoom, let periodicInterval, estimate < range.upperBound {
            let since = max(lastProbe ?? start, lastDecrease ?? start)
            if now - since >= periodicInterval {
                initiate([Self.periodicScale * estimate], probeFurther: true, now: now)
            }
        }
        return pending.isEmpty ? nil : pending.removeFirst()
    }

    /// The estimate after a feedback; continues exponential probing when a result went far enough.
    mutating func onEstimate(_ bitrate: Double, hasRoom: Bool, now: Int64) {
        estimate = bitrate
        if state == .waitingForResult, bitrate > minimumToProbeFurther, hasRoom {
            initiate([Self.furtherScale * bitrate], probeFurther: true, now: now)
        }
    }

    /// Asks for one cluster at `bitrate` (capped at the maximum); ignored at or under the
    /// estimate or while another probe is under way. With `probeFurther`, a result above 70 %
    /// of the cluster's rate starts the exponential series from there (a link that opened up
    /// is found in a few round trips, not one periodic probe every few seconds).
    mutating func request(bitrate: Double, probeFurther: Bool = false, now: Int64) {
        guard bitrate.isFinite, bitrate > estimate, !isProbing else { return }
        initiate([bitrate], probeFurther: probeFurther, now: now)
    }

    private mutating func initiate(_ bitrates: [Double], probeFurther: Bool, now: Int64) {
        var further = probeFurther
        var last = range.lowerBound
        for requested in bitrates {
            var bitrate = max(requested, range.lowerBound)
            if bitrate >= range.upperBound {
                bitrate = range.upperBound
                further = false
            }
            last = bitrate
            enqueue(bitrate: bitrate, now: now)
        }
        lastProbe = now
        if further {
            state = .waitingForResult
            minimumToProbeFurther = last * Self.furtherThreshold
        } else {
            complete()
        }
    }

    private mutating func enqueue(bitrate: Double, now: Int64) {
        let bytes = Int((bitrate * Double(Self.minimumDuration) / 8_000_000).rounded(.up))
        let cluster = ProbeCluster(
            id: Int(nextID), targetBitrate: Int(bitrate), minimumBytes: bytes, minimumPackets: Self.minimumPackets,
            createdAt: MediaTime(nanoseconds: UInt64(max(now, 0)) &* 1_000))
        nextID = nextID == .max ? 1 : nextID + 1
        if pending.count < 4 { pending.append(cluster) }
        if issued.count == Self.remembered { issued.removeFirst() }
        issued.append(cluster)
    }

    private mutating func complete() {
        state = .complete
        minimumToProbeFurther = .infinity
    }
}
