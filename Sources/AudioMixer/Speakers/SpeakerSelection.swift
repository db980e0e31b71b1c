/// One participant's observation for one tick, as the room-level detectors take it: its level
/// (dBov, from RFC 6464 or measured), the voice-activity decision, and whether it is muted.
public struct SpeakerCandidate<ID: Hashable & Sendable>: Sendable, Equatable {
    public var id: ID
    /// dBov, 0 … -127.
    public var levelDBov: Float
    public var voiceActive: Bool
    public var muted: Bool

    public init(id: ID, levelDBov: Float, voiceActive: Bool, muted: Bool = false) {
        self.id = id
        self.levelDBov = levelDBov
        self.voiceActive = voiceActive
        self.muted = muted
    }

    /// Whether this observation may put the participant in the mix: talking and not muted.
    var isEligible: Bool { voiceActive && !muted }
}

/// Chooses the room's mixed speakers, at most `maximumSpeakers` (the room's `mixedSpeakers`),
/// once per tick, with hysteresis so the set does not flap.
///
/// Driven by `update(_:)` with every participant's `SpeakerCandidate` each tick; it returns the
/// ordered set of speakers. The rules, in the order they apply:
/// 1. A speaker leaves at once when muted or absent from the tick's candidates, and after
///    `leaveAfterSilentTicks` ticks without voice activity (the hangover).
/// 2. A free place is taken at once by the loudest eligible (voice-active, unmuted) newcomer,
///    so the first syllable is mixed.
/// 3. When the set is full, a newcomer replaces the quietest speaker only after its smoothed
///    level has exceeded that speaker's by `replacementMarginDB` for `replacementTicks`
///    consecutive ticks.
///
/// Levels are smoothed with a fast attack and a slow linear release (dB per tick), so a
/// speaker's level holds through the short pauses between words and a newcomer must be
/// persistently louder. Order: a speaker keeps its position while it stays; a replacement takes
/// the replaced speaker's position; newcomers append. Never allocates once its tables have grown.
public struct SpeakerSelection<ID: Hashable & Sendable>: Sendable {
    public typealias Configuration = SpeakerSelectionConfiguration

    /// What the selection remembers per participant between ticks.
    struct Track: Sendable {
        var smoothedDBov = AudioLevel.silenceDBov
        var silentTicks = 0
        var challengeTicks = 0
        var lastSeenTick: UInt64 = 0
        var eligible = false
        var muted = false
        var isSpeaker = false
    }

    /// A newcomer ranked for a free place or a replacement this tick.
    private struct Ranked: Sendable {
        var index: Int
        var level: Float
    }

    public private(set) var configuration: Configuration
    /// The current speakers, in position order (see the type's documentation).
    public private(set) var speakers: [ID] = []
    private var tracks = DenseTable<ID, Track>()
    private var ranked: [Ranked] = []
    private var tick: UInt64 = 0

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration.sanitized
        speakers.reserveCapacity(self.configuration.maximumSpeakers)
        ranked.reserveCapacity(self.configuration.maximumSpeakers)
    }

    /// The smoothed level the selection compares, nil for an unknown participant.
    public func smoothedLevel(of id: ID) -> Float? {
        tracks.index(of: id).map { tracks.values[$0].smoothedDBov }
    }

    /// Runs one tick over every participant's candidate and returns the speakers.
    @discardableResult
    public mutating func update(_ candidates: [SpeakerCandidate<ID>]) -> [ID] {
        tick &+= 1
        for candidate in candidates { observe(candidate) }
        dropLeavingSpeakers()
        let quietest = quietestSpeaker()
        rankNewcomers(challenging: speakers.count >= configuration.maximumSpeakers ? quietest : nil)
        fillFreePlaces()
        replaceQuietSpeakers()
        return speakers
    }

    /// Changes how many speakers the mix holds (the room's `mixedSpeakers` was edited). When
    /// the limit shrinks, the quietest speakers leave at once; when it grows, the next tick
    /// fills the new places with the loudest eligible participants.
    public mutating func setMaximumSpeakers(_ maximum: Int) {
        configuration.maximumSpeakers = max(0, maximum)
        while speakers.count > configuration.maximumSpeakers, let quietest = quietestSpeaker() {
            if let index = tracks.index(of: speakers[quietest.position]) { tracks.values[index].isSpeaker = false }
            speakers.remove(at: quietest.position)
        }
    }

    /// Forgets a participant that left the room; it stops being a speaker at once.
    public mutating func remove(_ id: ID) {
        guard tracks.remove(id) != nil else { return }
        speakers.removeAll { $0 == id }
    }

    private mutating func observe(_ candidate: SpeakerCandidate<ID>) {
        let index = tracks.index(of: candidate.id) { Track() }
        let c = configuration
        let raw = candidate.levelDBov
        let level = raw.isNaN ? AudioLevel.silenceDBov : min(0, max(AudioLevel.silenceDBov, raw))
        let sample = candidate.isEligible ? level : AudioLevel.silenceDBov
        var track = tracks.values[index]
        if sample > track.smoothedDBov {
            track.smoothedDBov += c.attack * (sample - track.smoothedDBov)
        } else {
            track.smoothedDBov = max(sample, track.smoothedDBov - c.releaseDBPerTick)
        }
        track.silentTicks = candidate.isEligible ? 0 : track.silentTicks &+ 1
        track.eligible = candidate.isEligible
        track.muted = candidate.muted
        track.lastSeenTick = tick
        tracks.values[index] = track
    }

    private mutating func dropLeavingSpeakers() {
        var position = speakers.count - 1
        while position >= 0 {
            if let index = tracks.index(of: speakers[position]) {
                let track = tracks.values[index]
                let leaves = track.lastSeenTick != tick || track.muted
                    || track.silentTicks >= configuration.leaveAfterSilentTicks
                if leaves {
                    tracks.values[index].isSpeaker = false
                    speakers.remove(at: position)
                }
            } else {
                speakers.remove(at: position)
            }
            position -= 1
        }
    }

    /// Position in `speakers` and smoothed level of the quietest speaker; nil without speakers.
    private func quietestSpeaker() -> (position: Int, level: Float)? {
        var quietest: (position: Int, level: Float)?
        for (position, id) in speakers.enumerated() {
            guard let index = tracks.index(of: id) else { continue }
            let level = tracks.values[index].smoothedDBov
            if level < quietest?.level ?? .infinity { quietest = (position, level) }
        }
        return quietest
    }

    /// Keeps the loudest eligible newcomers (at most `maximumSpeakers`, loudest first) in
    /// `ranked`, and counts the challenge ticks against `quietest` when the set is full.
    private mutating func rankNewcomers(challenging quietest: (position: Int, level: Float)?) {
        // Work on a local array (swapped out, so no copy) to keep `self` free inside the loop.
        var ranked: [Ranked] = []
        swap(&ranked, &self.ranked)
        ranked.removeAll(keepingCapacity: true)
        let limit = configuration.maximumSpeakers
        let threshold = quietest.map { $0.level + configuration.replacementMarginDB }
        let now = tick
        tracks.values.withUnsafeMutableBufferPointer { values in
            for index in values.indices {
                guard !values[index].isSpeaker else { continue }
                guard values[index].eligible, values[index].lastSeenTick == now else {
                    values[index].challengeTicks = 0
                    continue
                }
                let level = values[index].smoothedDBov
                if let threshold, level > threshold {
                    values[index].challengeTicks &+= 1
                } else {
                    values[index].challengeTicks = 0
                }
                Self.insert(Ranked(index: index, level: level), into: &ranked, limit: limit)
            }
        }
        swap(&ranked, &self.ranked)
    }

    private static func insert(_ entry: Ranked, into ranked: inout [Ranked], limit: Int) {
        guard limit > 0 else { return }
        if ranked.count == limit {
            guard entry.level > ranked[limit - 1].level else { return }
            ranked.removeLast()
        }
        var position = ranked.count
        while position > 0, ranked[position - 1].level < entry.level { position -= 1 }
        ranked.insert(entry, at: position)
    }

    private mutating func fillFreePlaces() {
        var next = 0
        while speakers.count < configuration.maximumSpeakers, next < ranked.count {
            promote(ranked[next].index, at: nil)
            next += 1
        }
        ranked.removeFirst(next)
    }

    private mutating func replaceQuietSpeakers() {
        for entry in ranked {
            let track = tracks.values[entry.index]
            guard track.challengeTicks >= configuration.replacementTicks else { continue }
            guard let quietest = quietestSpeaker(),
                  entry.level > quietest.level + configuration.replacementMarginDB
            else { break }
            if let replaced = tracks.index(of: speakers[quietest.position]) {
                tracks.values[replaced].isSpeaker = false
            }
            promote(entry.index, at: quietest.position)
        }
    }

    /// Makes the track at `index` a speaker: appended, or in place of the speaker at `position`.
    private mutating func promote(_ index: Int, at position: Int?) {
        tracks.values[index].isSpeaker = true
        tracks.values[index].challengeTicks = 0
        let id = tracks.ids[index]
        if let position { speakers[position] = id } else { speakers.append(id) }
    }
}

/// Tuning of `SpeakerSelection`, in ticks of 20 ms (not generic, so one value configures
/// a selection over any ID type).
public struct SpeakerSelectionConfiguration: Sendable, Equatable {
    /// How many speakers the mix holds at most (the room's `mixedSpeakers`).
    public var maximumSpeakers: Int
    /// How much louder (smoothed) a newcomer must be than the quietest speaker to challenge it.
    public var replacementMarginDB: Float
    /// How many consecutive ticks the challenge must last.
    public var replacementTicks: Int
    /// Ticks without voice activity after which a speaker leaves (500 ms by default).
    public var leaveAfterSilentTicks: Int
    /// Fraction of the distance the smoothed level moves up toward a louder frame, per tick.
    public var attack: Float
    /// dB per tick the smoothed level may fall.
    public var releaseDBPerTick: Float

    public init(
        maximumSpeakers: Int = 3, replacementMarginDB: Float = 6, replacementTicks: Int = 5,
        leaveAfterSilentTicks: Int = 25, attack: Float = 0.5, releaseDBPerTick: Float = 0.5
    ) {
        self.maximumSpeakers = max(0, maximumSpeakers)
        self.replacementMarginDB = replacementMarginDB.isFinite ? replacementMarginDB : 6
        self.replacementTicks = max(1, replacementTicks)
        self.leaveAfterSilentTicks = max(1, leaveAfterSilentTicks)
        self.attack = attack.isFinite ? min(1, max(0, attack)) : 0.5
        self.releaseDBPerTick = releaseDBPerTick.isFinite ? max(0, releaseDBPerTick) : 0.5
    }

    /// The same values through the clamps of `init` (the fields are settable after it).
    var sanitized: Self {
        Self(
            maximumSpeakers: maximumSpeakers, replacementMarginDB: replacementMarginDB,
            replacementTicks: replacementTicks, leaveAfterSilentTicks: leaveAfterSilentTicks,
            attack: attack, releaseDBPerTick: releaseDBPerTick)
    }
}
