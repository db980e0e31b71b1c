import ChorusCore

/// A change in whether one participant is talking: the room turns it into a
/// `talking.started` / `talking.stopped` event.
public enum TalkingTransition: Sendable, Hashable {
    case started
    case stopped
}

/// Whether one participant is talking, for the `talking.started` / `talking.stopped` events,
/// with hysteresis: talking starts after `startAfter` of continuous voice activity and stops
/// after `stopAfter` without it, so a cough does not start it and the pauses between sentences
/// do not stop it. Muting stops it at once (a muted participant is not heard).
///
/// Driven by `update(voiceActive:muted:at:)` once per tick with the voice-activity decision
/// (`VoiceActivityDetector`) and the tick's time; it returns the transition, if any. A value
/// type, one per participant; time only comes in as `MediaTime`, and a clock that goes
/// backwards counts as no time passing. Fed by `VoiceActivityDetector`, whose own hangover
/// (100 ms) holds its decision after the voice ends, `talking.stopped` comes about 600 ms after
/// the last syllable with the defaults.
public struct TalkingDetector: Sendable, Equatable {
    /// The two hysteresis durations.
    public struct Configuration: Sendable, Equatable {
        /// Continuous activity needed to start talking (100 ms by default).
        public var startAfterNanoseconds: UInt64
        /// Continuous quiet needed to stop talking (500 ms by default).
        public var stopAfterNanoseconds: UInt64

        public init(startAfterMilliseconds: UInt64 = 100, stopAfterMilliseconds: UInt64 = 500) {
            startAfterNanoseconds = startAfterMilliseconds &* 1_000_000
            stopAfterNanoseconds = stopAfterMilliseconds &* 1_000_000
        }
    }

    public let configuration: Configuration
    public private(set) var isTalking = false
    /// Start of the current run of active (when not talking) or quiet (when talking) ticks.
    private var runStart: MediaTime?

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Feeds one tick; returns `.started` or `.stopped` when the state changes.
    public mutating func update(voiceActive: Bool, muted: Bool = false, at now: MediaTime) -> TalkingTransition? {
        if muted {
            runStart = nil
            guard isTalking else { return nil }
            isTalking = false
            return .stopped
        }
        // A run is of ticks that disagree with the current state; an agreeing tick ends it.
        guard voiceActive != isTalking else {
            runStart = nil
            return nil
        }
        let start = runStart ?? now
        runStart = start
        let needed = isTalking ? configuration.stopAfterNanoseconds : configuration.startAfterNanoseconds
        guard now.nanoseconds(since: start) >= needed else { return nil }
        isTalking.toggle()
        runStart = nil
        return isTalking ? .started : .stopped
    }

    /// Ends talking without hysteresis (the participant left); returns `.stopped` if it was talking.
    public mutating func reset() -> TalkingTransition? {
        runStart = nil
        guard isTalking else { return nil }
        isTalking = false
        return .stopped
    }
}
