import ChorusCore

/// What the room hands the mixer for one participant before a tick (`RoomAudioMixer.setInput`).
///
/// `frame` and `audioLevel` describe this tick's 20 ms and are consumed by the tick. `muted` and
/// `receivesAudio` are states: they stay as last set until the next `setInput`, so a room that
/// skips a participant for a tick never unmutes it by accident.
public struct AudioMixerInput: Sendable {
    /// A decoded 20 ms frame, 48 kHz mono, 960 samples (others are padded or truncated).
    public enum Frame: Sendable {
        /// 16-bit PCM, full scale 32768 (what `opus_decode` writes).
        case int16([Int16])
        /// Normalised samples, full scale 1.0 (what `opus_decode_float` writes).
        case float([Float])
    }

    /// The decoded audio, nil when nothing arrived (no packet and no concealment): the
    /// participant then contributes silence this tick.
    public var frame: Frame?
    /// The RFC 6464 level the client sent with this frame; nil to measure it on `frame`.
    public var audioLevel: SSRCAudioLevel?
    /// The participant sent audio this tick that the room has not decoded (one whole packet,
    /// `frame` is nil, `audioLevel` says how loud it is). The tick asks for its samples
    /// (`tick(now:decode:)`) only when a mix needs them: a lone speaker contributes to the
    /// full mix alone, which the room relays as that packet, so nobody decodes it.
    public var undecoded: Bool
    /// A muted participant is never mixed (it still hears the room).
    public var muted: Bool
    /// False for a participant that cannot receive yet (no media path): it is nobody's recipient.
    public var receivesAudio: Bool

    public init(
        frame: Frame? = nil, audioLevel: SSRCAudioLevel? = nil, muted: Bool = false, receivesAudio: Bool = true,
        undecoded: Bool = false
    ) {
        self.frame = frame
        self.audioLevel = audioLevel
        self.undecoded = undecoded
        self.muted = muted
        self.receivesAudio = receivesAudio
    }
}

/// A speaking-state change the room publishes as a room event.
public enum AudioMixerEvent<ID: Hashable & Sendable>: Sendable, Hashable {
    /// `talking.started`: the participant started talking (after the start hysteresis).
    case talkingStarted(ID)
    /// `talking.stopped`: the participant stopped talking, was muted, or left.
    case talkingStopped(ID)
    /// `speaker.dominant`: the room's dominant speaker changed; nil when the dominant speaker
    /// left and nobody has taken the floor yet.
    case dominantSpeaker(ID?)

    /// The room event's name.
    public var name: String {
        switch self {
        case .talkingStarted: return "talking.started"
        case .talkingStopped: return "talking.stopped"
        case .dominantSpeaker: return "speaker.dominant"
        }
    }
}

/// The result of one `RoomAudioMixer.tick`: the distinct mixes to encode (one encode each) with
/// their recipients and contributing sources, the speakers, and the events.
///
/// The caller encodes each mix once and sends the payload to each of its recipients through the
/// recipient's `OutboundAudioStream`, with the mix's `csrcs` and `csrcAudioLevels`. The value
/// shares storage with the mixer: drop it before the next tick (keeping it is correct, but the
/// next tick then copies its buffers).
public struct AudioMixerTick<ID: Hashable & Sendable>: Sendable {
    /// One distinct mix of this tick.
    public struct Mix: Sendable {
        /// Which mix: the full mix, or a speaker's "minus one" mix.
        public internal(set) var kind: MixPlan<ID>.Mix = .full
        /// 960 samples of 16-bit PCM, 48 kHz mono, limited: the input of one encode.
        public internal(set) var samples: [Int16]
        /// The speakers whose audio is in the mix, loudest first.
        public internal(set) var contributingSources: [ID] = []
        /// RFC 3550 CSRC list: the SSRCs of the contributing sources that have one, loudest
        /// first, at most 15.
        public internal(set) var csrcs: [SSRC] = []
        /// RFC 6465 levels (-dBov, 0…127), one per entry of `csrcs`, in the same order.
        public internal(set) var csrcAudioLevels: [UInt8] = []
        /// Who hears this mix.
        public internal(set) var recipients: [ID] = []
        /// The same recipients by slot (`RoomAudioMixer.Handle.slot`), in the same order.
        public internal(set) var recipientSlots: [Int] = []
        /// True on the first tick of a speaker's own mix. Its recipient heard the full mix until
        /// now, so an encoder for this mix may start as a copy of the full mix encoder's state
        /// (the limiter's state was carried over the same way): the recipient's stream then
        /// continues without a discontinuity.
        public internal(set) var startsFromFullMix = false

        /// A mix with `frameLength` samples of silence; 0 makes an empty placeholder that
        /// allocates nothing (used to swap a pooled mix out while it is rendered).
        init(frameLength: Int = AudioMixerCore.frameLength) {
            samples = [Int16](repeating: 0, count: frameLength)
        }

        /// True when no audio is in the mix (no speakers, or the only speaker's own mix): an
        /// encoder with DTX, or a caller that skips the packet, can save the bandwidth.
        public var isSilent: Bool { contributingSources.isEmpty }
    }

    /// Reused mixes; the first `mixCount` are this tick's.
    var pool: [Mix] = []
    var mixCount = 0

    /// This tick's distinct mixes: the full mix first (when anyone hears it), then the speakers'
    /// own mixes in speaker order. At most `mixedSpeakers + 1`.
    public var mixes: ArraySlice<Mix> { pool[0..<mixCount] }
    /// Number of encodes this tick (one per mix).
    public var encodeCount: Int { mixCount }
    /// The mixed speakers, in `SpeakerSelection` order.
    public internal(set) var speakers: [ID] = []
    /// The room's dominant speaker after this tick.
    public internal(set) var dominantSpeaker: ID?
    /// Talking and dominant-speaker changes, in that order.
    public internal(set) var events: [AudioMixerEvent<ID>] = []

    /// The mix `recipient` hears this tick (a linear search: for tests and diagnostics).
    public func mix(for recipient: ID) -> Mix? {
        mixes.first { $0.recipients.contains(recipient) }
    }
}
