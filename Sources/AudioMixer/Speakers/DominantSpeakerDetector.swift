/// The room's dominant speaker, for the `speaker.dominant` event (the person a layout would put
/// on the big tile): the participant with the highest speech score over about the last second,
/// with switch hysteresis.
///
/// The score is an exponential average (time constant `windowTicks`) of "how far above
/// `scoreFloorDBov` the participant spoke this tick", zero when not voice-active or muted: it
/// rewards talking both loudly and often. The first participant to reach `minimumScore` becomes
/// dominant at once; after that a challenger must beat the dominant speaker's score by
/// `switchMargin` for `switchTicks` consecutive ticks. The dominant speaker stays dominant
/// through silence (nobody else took the floor) and is dropped only when it leaves.
///
/// Driven by `update(_:)` once per tick with every participant's `SpeakerCandidate`; it returns
/// true when `dominantSpeaker` changed. Never allocates once its table has grown.
public struct DominantSpeakerDetector<ID: Hashable & Sendable>: Sendable {
    public typealias Configuration = DominantSpeakerConfiguration

    /// A participant's score and its current challenge against the dominant speaker.
    struct Entry: Sendable {
        var score: Float = 0
        var challengeTicks = 0
        var lastSeenTick: UInt64 = 0
    }

    public let configuration: Configuration
    public private(set) var dominantSpeaker: ID?
    private var entries = DenseTable<ID, Entry>()
    private var tick: UInt64 = 0
    /// Set when the dominant speaker was removed, so the next update reports the change.
    private var removedDominant = false

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration.sanitized
    }

    /// The current score of `id`, nil for an unknown participant.
    public func score(of id: ID) -> Float? {
        entries.index(of: id).map { entries.values[$0].score }
    }

    /// Runs one tick; returns true when `dominantSpeaker` changed (possibly to nil).
    @discardableResult
    public mutating func update(_ candidates: [SpeakerCandidate<ID>]) -> Bool {
        tick &+= 1
        let alpha = 1 / Float(configuration.windowTicks)
        for candidate in candidates {
            let index = entries.index(of: candidate.id) { Entry() }
            let level = candidate.levelDBov.isNaN ? AudioLevel.silenceDBov : min(0, candidate.levelDBov)
            let sample = candidate.isEligible ? max(0, level - configuration.scoreFloorDBov) : 0
            entries.values[index].score += alpha * (sample - entries.values[index].score)
            entries.values[index].lastSeenTick = tick
        }
        var changed = removedDominant
        removedDominant = false
        var currentIndex = dominantSpeaker.flatMap { entries.index(of: $0) }
        if let index = currentIndex, entries.values[index].lastSeenTick != tick {
            dominantSpeaker = nil
            currentIndex = nil
            changed = true
        }
        if let next = challengerToPromote(against: currentIndex) {
            dominantSpeaker = entries.ids[next]
            entries.values[next].challengeTicks = 0
            changed = true
        }
        return changed
    }

    /// Forgets a participant that left; if it was dominant, the next update reports the change.
    public mutating func remove(_ id: ID) {
        guard entries.remove(id) != nil else { return }
        if dominantSpeaker == id {
            dominantSpeaker = nil
            removedDominant = true
        }
    }

    /// Counts challenges against the dominant speaker at `current` and returns the index of the
    /// participant that takes over this tick, if any.
    private mutating func challengerToPromote(against current: Int?) -> Int? {
        let c = configuration
        let threshold = current.map { entries.values[$0].score + c.switchMargin }
        var best: Int?
        var bestScore = -Float.infinity
        let now = tick
        entries.values.withUnsafeMutableBufferPointer { values in
            for index in values.indices where index != current {
                guard values[index].lastSeenTick == now else {
                    values[index].challengeTicks = 0
                    continue
                }
                if let threshold, values[index].score > threshold {
                    values[index].challengeTicks &+= 1
                } else {
                    values[index].challengeTicks = 0
                }
                if values[index].score > bestScore {
                    bestScore = values[index].score
                    best = index
                }
            }
        }
        guard let best else { return nil }
        if current == nil {
            return bestScore >= c.minimumScore ? best : nil
        }
        return entries.values[best].challengeTicks >= c.switchTicks ? best : nil
    }
}

/// Tuning of `DominantSpeakerDetector`, in ticks of 20 ms (not generic, so one value
/// configures a detector over any ID type).
public struct DominantSpeakerConfiguration: Sendable, Equatable {
    /// Averaging time constant in ticks (50 ticks = 1 s).
    public var windowTicks: Int
    /// Levels at or below this score nothing.
    public var scoreFloorDBov: Float
    /// Score needed to become dominant when there is no dominant speaker.
    public var minimumScore: Float
    /// How much a challenger's score must exceed the dominant speaker's.
    public var switchMargin: Float
    /// For how many consecutive ticks.
    public var switchTicks: Int

    public init(
        windowTicks: Int = 50, scoreFloorDBov: Float = -70, minimumScore: Float = 3,
        switchMargin: Float = 6, switchTicks: Int = 10
    ) {
        self.windowTicks = max(1, windowTicks)
        self.scoreFloorDBov = scoreFloorDBov.isFinite ? scoreFloorDBov : -70
        self.minimumScore = minimumScore.isFinite ? minimumScore : 3
        self.switchMargin = switchMargin.isFinite ? switchMargin : 6
        self.switchTicks = max(1, switchTicks)
    }

    /// The same values through the clamps of `init` (the fields are settable after it).
    var sanitized: Self {
        Self(
            windowTicks: windowTicks, scoreFloorDBov: scoreFloorDBov, minimumScore: minimumScore,
            switchMargin: switchMargin, switchTicks: switchTicks)
    }
}
