/// Energy-based voice activity detection for one participant, one decision per 20 ms frame.
///
/// Driven by `update(levelDBov:)` once per tick with the frame's level: measured on the decoded
/// audio (`AudioLevel.dBov(of:)`) for clients that send no RFC 6464 extension (aiortc), or the
/// extension's level. A frame is active when it is both above an absolute threshold and a
/// margin above the tracked noise floor; a hangover keeps the decision active for a few frames
/// after the last active one, so the gaps between words do not toggle it.
///
/// The noise floor starts at the first frame's level (a participant rarely talks in its first
/// 20 ms), falls quickly toward quieter frames and rises slowly, proportionally to the distance,
/// and it is capped (`noiseFloorCeilingDBov`): a steady loud signal (a test tone, someone who
/// talks without pause) is never learnt as noise, while comfort noise and a quiet room are.
/// It is a value type: the mixer keeps one per participant; it never allocates.
public struct VoiceActivityDetector: Sendable, Equatable {
    /// Tuning; the defaults tell speech or a tone (≥ about -45 dBov) from silence and comfort
    /// noise (≤ about -55 dBov).
    public struct Configuration: Sendable, Equatable {
        /// Frames quieter than this are never voice, whatever the floor.
        public var absoluteThresholdDBov: Float
        /// How far above the noise floor a frame must be to count as voice.
        public var marginDB: Float
        /// The floor never rises above this, so loud steady signals stay "voice".
        public var noiseFloorCeilingDBov: Float
        /// The floor never falls below this (digital silence would otherwise pin it at -127).
        public var noiseFloorMinimumDBov: Float
        /// Fraction of the distance the floor moves toward a quieter frame, per frame.
        public var fallRate: Float
        /// Fraction of the distance the floor moves toward a louder frame, per frame...
        public var riseRate: Float
        /// ... but at least this many dB per frame, so it converges near the target too.
        public var minimumRiseDB: Float
        /// Frames the decision stays active after the last active frame.
        public var hangoverFrames: Int

        public init(
            absoluteThresholdDBov: Float = -60, marginDB: Float = 9, noiseFloorCeilingDBov: Float = -50,
            noiseFloorMinimumDBov: Float = -90, fallRate: Float = 0.3, riseRate: Float = 0.02,
            minimumRiseDB: Float = 0.05, hangoverFrames: Int = 5
        ) {
            self.absoluteThresholdDBov = absoluteThresholdDBov
            self.marginDB = marginDB
            self.noiseFloorCeilingDBov = noiseFloorCeilingDBov
            self.noiseFloorMinimumDBov = noiseFloorMinimumDBov
            self.fallRate = fallRate
            self.riseRate = riseRate
            self.minimumRiseDB = minimumRiseDB
            self.hangoverFrames = hangoverFrames
        }

        public static let `default` = Configuration()
    }

    public let configuration: Configuration
    /// The tracked noise floor in dBov; nil before the first frame.
    public private(set) var noiseFloorDBov: Float?
    /// The decision after the last `update`, hangover included.
    public private(set) var isActive = false
    /// Frames left in the hangover.
    private var hangoverLeft = 0

    public init(configuration: Configuration = .default) {
        self.configuration = configuration
    }

    /// Feeds one frame's level (dBov, 0 … -127; NaN counts as silence) and returns whether the
    /// participant is talking, hangover included.
    @discardableResult
    public mutating func update(levelDBov: Float) -> Bool {
        let level = levelDBov.isNaN ? AudioLevel.silenceDBov : min(0, max(AudioLevel.silenceDBov, levelDBov))
        let floor = trackFloor(level)
        let rawActive = level >= configuration.absoluteThresholdDBov && level >= floor + configuration.marginDB
        if rawActive {
            hangoverLeft = max(0, configuration.hangoverFrames)
            isActive = true
        } else if hangoverLeft > 0 {
            hangoverLeft -= 1
            isActive = true
        } else {
            isActive = false
        }
        return isActive
    }

    /// Moves the floor toward `level` and returns the floor the decision compares against: the
    /// one from before this frame, so a loud onset is judged against the quiet that preceded it.
    private mutating func trackFloor(_ level: Float) -> Float {
        let c = configuration
        let target = min(c.noiseFloorCeilingDBov, max(c.noiseFloorMinimumDBov, level))
        guard let floor = noiseFloorDBov else {
            noiseFloorDBov = target
            return target
        }
        if target < floor {
            noiseFloorDBov = floor + c.fallRate * (target - floor)
        } else {
            let step = max(c.minimumRiseDB, c.riseRate * (target - floor))
            noiseFloorDBov = min(target, floor + step)
        }
        return floor
    }

    /// Forgets the floor and the hangover (for example when the participant's source changes).
    public mutating func reset() {
        noiseFloorDBov = nil
        isActive = false
        hangoverLeft = 0
    }
}
