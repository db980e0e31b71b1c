import ChorusCore

/// The room's audio settings for `RoomAudioMixer` (not generic, so the room can build one from
/// its settings without naming an ID type).
public struct AudioMixerConfiguration: Sendable, Equatable {
    /// The room's `mixedSpeakers` (0…32); overrides `selection.maximumSpeakers`.
    public var mixedSpeakers: Int
    public var voiceActivity: VoiceActivityDetector.Configuration
    public var selection: SpeakerSelectionConfiguration
    public var talking: TalkingDetector.Configuration
    public var dominantSpeaker: DominantSpeakerConfiguration
    public var limiter: SoftLimiter.Configuration

    public init(
        mixedSpeakers: Int = 3,
        voiceActivity: VoiceActivityDetector.Configuration = .default,
        selection: SpeakerSelectionConfiguration = SpeakerSelectionConfiguration(),
        talking: TalkingDetector.Configuration = TalkingDetector.Configuration(),
        dominantSpeaker: DominantSpeakerConfiguration = DominantSpeakerConfiguration(),
        limiter: SoftLimiter.Configuration = SoftLimiter.Configuration()
    ) {
        self.mixedSpeakers = min(32, max(0, mixedSpeakers))
        self.voiceActivity = voiceActivity
        self.selection = selection
        self.selection.maximumSpeakers = self.mixedSpeakers
        self.talking = talking
        self.dominantSpeaker = dominantSpeaker
        self.limiter = limiter
    }
}

/// The non-generic heart of `RoomAudioMixer`: all per-tick work on participants identified by
/// dense slot numbers. Keeping it free of the caller's ID type means it is compiled specialised
/// once, here; the generic wrapper only maps slots to IDs for the tick's output (measured: the
/// unspecialised generic version spent most of a 500-participant tick in retain/release and
/// generic metadata lookups).
///
/// Driven by `RoomAudioMixer`: `prepare(now:)`, then `render(_:…)` for each planned mix, then
/// `finish()`. Per-participant state is mutated in place in `participants` (no struct copies,
/// so no reference counting of the frames in the loops).
struct MixerEngine: Sendable {
    /// Everything kept per participant.
    struct ParticipantState: Sendable {
        var occupied = true
        var generation: UInt32
        var ssrc: SSRC?
        var vad: VoiceActivityDetector
        var talking: TalkingDetector
        /// The limiter of this participant's own mix while it is a speaker.
        var limiter: SoftLimiter
        var frame: AudioMixerInput.Frame?
        var audioLevel: SSRCAudioLevel?
        /// Audio this tick that the room has not decoded (`AudioMixerInput.undecoded`).
        var undecoded = false
        var muted = false
        var receivesAudio = true
        /// This tick's level (dBov) and voice-activity decision.
        var levelDBov = AudioLevel.silenceDBov
        var voiceActive = false
        /// Whether it is a speaker this tick / was one last tick.
        var isSpeaker = false
        var wasSpeaker = false
        /// Its row in `AudioMixerCore` this tick, nil when it contributes nothing.
        var sourceIndex: Int?

        /// Takes one tick's input (`AudioMixerInput`).
        mutating func apply(_ input: AudioMixerInput) {
            frame = input.frame
            audioLevel = input.audioLevel
            undecoded = input.undecoded && input.audioLevel != nil
            muted = input.muted
            receivesAudio = input.receivesAudio
        }
    }

    /// A talking or dominant-speaker change, by slot.
    enum Event: Sendable, Equatable {
        case talkingStarted(Int)
        case talkingStopped(Int)
        case dominantSpeaker(Int?)
    }

    private(set) var configuration: AudioMixerConfiguration
    /// Produce the full mix every tick, listeners or not (the room is recorded or forwarded).
    var alwaysMixFull = false
    var participants: [ParticipantState] = []
    var freeSlots: [Int] = []
    var selection: SpeakerSelection<Int>
    var dominant: DominantSpeakerDetector<Int>
    var plan = MixPlan<Int>()
    var core: AudioMixerCore
    var fullMixLimiter: SoftLimiter
    /// Per-tick results and scratch, kept for their capacity.
    var candidates: [SpeakerCandidate<Int>] = []
    var previousSpeakers: [Int] = []
    /// This tick's speakers that contribute audio, loudest first.
    var contributors: [Int] = []
    /// Receiving participants that are not speakers: the full mix's recipients.
    var listeners: [Int] = []
    var events: [Event] = []

    init(configuration: AudioMixerConfiguration) {
        self.configuration = configuration
        selection = SpeakerSelection(configuration: configuration.selection)
        dominant = DominantSpeakerDetector(configuration: configuration.dominantSpeaker)
        core = AudioMixerCore(maximumSources: configuration.mixedSpeakers)
        fullMixLimiter = SoftLimiter(configuration: configuration.limiter)
    }

    var speakers: [Int] { selection.speakers }

    /// Applies a new `mixedSpeakers` between ticks: the selection's limit and the core's rows.
    /// Allocates (a control operation, not on the tick's path).
    mutating func setMixedSpeakers(_ count: Int) {
        configuration = AudioMixerConfiguration(
            mixedSpeakers: count, voiceActivity: configuration.voiceActivity, selection: configuration.selection,
            talking: configuration.talking, dominantSpeaker: configuration.dominantSpeaker,
            limiter: configuration.limiter)
        selection.setMaximumSpeakers(configuration.mixedSpeakers)
        core = AudioMixerCore(maximumSources: configuration.mixedSpeakers)
    }
    var dominantSpeaker: Int? { dominant.dominantSpeaker }

    /// Takes a free slot (or a new one) for a participant; returns it and its generation.
    mutating func addSlot(ssrc: SSRC?) -> (slot: Int, generation: UInt32) {
        let slot = freeSlots.popLast() ?? participants.count
        let generation = slot < participants.count ? participants[slot].generation &+ 1 : 0
        let state = ParticipantState(
            generation: generation, ssrc: ssrc,
            vad: VoiceActivityDetector(configuration: configuration.voiceActivity),
            talking: TalkingDetector(configuration: configuration.talking),
            limiter: SoftLimiter(configuration: configuration.limiter))
        if slot < participants.count { participants[slot] = state } else { participants.append(state) }
        return (slot, generation)
    }

    /// Frees a slot; returns true when its participant was talking.
    mutating func removeSlot(_ slot: Int) -> Bool {
        guard participants.indices.contains(slot), participants[slot].occupied else { return false }
        let wasTalking = participants[slot].talking.reset() != nil
        selection.remove(slot)
        dominant.remove(slot)
        previousSpeakers.removeAll { $0 == slot }
        participants[slot].occupied = false
        participants[slot].frame = nil
        participants[slot].isSpeaker = false
        participants[slot].wasSpeaker = false
        freeSlots.append(slot)
        return wasTalking
    }

    func isCurrent(slot: Int, generation: UInt32) -> Bool {
        participants.indices.contains(slot) && participants[slot].occupied
            && participants[slot].generation == generation
    }

    mutating func setInput(_ input: AudioMixerInput, slot: Int) {
        participants[slot].apply(input)
    }

    mutating func setSSRC(_ ssrc: SSRC?, slot: Int) {
        participants[slot].ssrc = ssrc
    }

    /// Everything up to rendering: levels, talking events, speakers, dominant speaker, plan,
    /// the undecoded speakers' samples when a mix needs them (`decode`, by slot), sources
    /// loaded into the core, contributors and listeners.
    mutating func prepare(now: MediaTime, decode: (Int) -> AudioMixerInput.Frame?) {
        events.removeAll(keepingCapacity: true)
        measureLevels(now: now)
        selection.update(candidates)
        if dominant.update(candidates) { events.append(.dominantSpeaker(dominant.dominantSpeaker)) }
        markSpeakers()
        planMixes()
        decodeSpeakersIfMixed(decode)
        loadSources()
    }

    /// Renders planned mix `index` into `samples` with its CSRCs (at most 15, RFC 3550 §5.1)
    /// and RFC 6465 levels; returns whether it is a speaker's own mix starting this tick.
    mutating func render(
        _ index: Int, into samples: inout [Int16], csrcs: inout [SSRC], levels: inout [UInt8]
    ) -> Bool {
        csrcs.removeAll(keepingCapacity: true)
        levels.removeAll(keepingCapacity: true)
        let excluded: Int?
        let startsFromFullMix: Bool
        switch plan.mixes[index] {
        case .full:
            excluded = nil
            startsFromFullMix = false
            core.renderMix(excluding: nil, limiter: &fullMixLimiter, into: &samples)
        case .minusOne(let slot):
            excluded = slot
            startsFromFullMix = !participants[slot].wasSpeaker
            core.renderMix(
                excluding: participants[slot].sourceIndex, limiter: &participants[slot].limiter, into: &samples)
        }
        for slot in contributors where slot != excluded {
            guard let ssrc = participants[slot].ssrc, csrcs.count < 15 else { continue }
            csrcs.append(ssrc)
            levels.append(AudioLevel.rfc6464Level(dBov: participants[slot].levelDBov))
        }
        return startsFromFullMix
    }

    /// Remembers this tick's speakers and drops the consumed frames, so the room's decode
    /// buffers are uniquely referenced again and are reused in place.
    mutating func finish() {
        for slot in previousSpeakers where participants[slot].occupied { participants[slot].wasSpeaker = false }
        for slot in selection.speakers { participants[slot].wasSpeaker = true }
        previousSpeakers.removeAll(keepingCapacity: true)
        previousSpeakers.append(contentsOf: selection.speakers)
        for slot in participants.indices where participants[slot].occupied {
            participants[slot].frame = nil
            participants[slot].audioLevel = nil
            participants[slot].undecoded = false
            participants[slot].sourceIndex = nil
        }
    }
}
