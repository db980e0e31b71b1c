import AudioMixer
import ChorusCore

/// The room's mix encoders: one per distinct mix (the shared full mix, and one "minus me" per
/// mixed speaker), kept while that mix exists so each stream's encoder state stays continuous.
///
/// An encoder that sat out ticks (its mix was relayed as one sender's packet, or silent) is
/// restarted before it encodes again: its history (the lookahead's last milliseconds, SILK's
/// pitch and gain state) is audio from before the gap, and carried into the first packet after
/// it, that audio rang again, e.g. a talker's tone heard a second time 200 ms after it ended.
///
/// Except when its recipient heard the full mix's encode on the tick before (a listener that
/// just became a speaker, or a speaker whose pause was sent the full mix): then the speaker's
/// encoder continues the full mix encoder's stream (`continueFullStream`, a copy of its state
/// from before this tick's encode), so the packets the recipient's decoder gets stay one
/// continuous stream. A fresh encoder there broke it at every speaker's start and after every
/// pause between its words. The other way (a speaker's pause starting, its stream going over
/// to the full mix's encode) keeps a smaller break: the shared encoder cannot take over any
/// one speaker's state.
struct MixEncoders {
    enum Key: Hashable { case full, minusOne(CallID) }
    /// A mix in an encoding other than Opus.
    struct PlainKey: Hashable {
        let mix: Key
        let encoding: AudioFormat.Encoding
    }

    var encoders: [Key: (encoder: OpusEncoder, lastTick: UInt64)] = [:]
    /// Encoders of mixes for listeners in other encodings (PCM at their rate).
    var plain: [PlainKey: (encoder: any AudioEncoder, lastTick: UInt64)] = [:]
    /// The tick being sent (`beginTick`), counted so a gap of one tick shows.
    private(set) var tick: UInt64 = 0
    var payload = [UInt8](repeating: 0, count: AudioCodecFormat.maxPayloadBytes)
    /// This tick's encoded full mix (kept for its capacity) and its contributors, nil before it
    /// is encoded: a speaker that contributes nothing this tick hears exactly that mix, so its
    /// own mix is sent from it, not encoded again.
    var fullPayload: [UInt8] = []
    var fullSources: [CallID]?
    /// Distinct encodes done, for tests and metrics.
    var encodes: UInt64 = 0
    /// Speakers' encoders started as a continuation of the full mix's stream, for tests.
    var continuations: UInt64 = 0
    /// The tick on which each speaker's mix was last sent as the full mix's encode.
    var heardFullEncode: [CallID: UInt64] = [:]

    mutating func beginTick() {
        tick &+= 1
        fullSources = nil
    }

    /// Before this tick's full mix is encoded: each speaker's own mix in `mixes` whose recipient
    /// heard the full mix's encode on the last tick (it was a listener then, or its pause was
    /// sent that encode), and whose own encoder did not encode then, gets its encoder as a copy
    /// of the full mix encoder's state. Its encoder then counts as having encoded the last
    /// tick, which it has in effect. Only a speaker's start or its pause's end copies anything.
    mutating func continueFullStream(into mixes: ArraySlice<AudioMixerTick<CallID>.Mix>, settings: AudioEncoding) {
        let previous = tick &- 1
        guard let full = encoders[.full], full.lastTick == previous else { return }
        for mix in mixes {
            guard case .minusOne(let id) = mix.kind, !mix.isSilent,
                  mix.startsFromFullMix || heardFullEncode[id] == previous
            else { continue }
            let key = Key.minusOne(id)
            if let own = encoders[key], own.lastTick == previous { continue }
            guard let encoder = encoders[key]?.encoder ?? makeEncoder(settings),
                  encoder.continueStream(of: full.encoder)
            else { continue }
            encoders[key] = (encoder, previous)
            continuations &+= 1
        }
    }

    /// Notes that a speaker's own mix went out as the full mix's encode this tick.
    mutating func noteHeardFullEncode(_ id: CallID) {
        heardFullEncode[id] = tick
    }

    /// The encoder of `key` for this tick: created on first use, restarted when it did not
    /// encode the previous tick.
    mutating func encoder(for key: Key, settings: AudioEncoding) -> OpusEncoder? {
        if let existing = encoders[key] {
            if existing.lastTick &+ 1 != tick { existing.encoder.reset() }
            encoders[key]?.lastTick = tick
            return existing.encoder
        }
        guard let created = makeEncoder(settings) else { return nil }
        encoders[key] = (created, tick)
        return created
    }

    private func makeEncoder(_ settings: AudioEncoding) -> OpusEncoder? {
        try? OpusEncoder(bitrate: settings.bitrate, complexity: settings.complexity, inbandFEC: true,
                         mode: settings.mode)
    }

    /// The encoder of `key`'s mix in another encoding than Opus (a phone's PCM): created on first
    /// use, its resampler restarted when it did not encode the previous tick.
    mutating func plainEncoder(for key: Key, format: AudioFormat) -> (any AudioEncoder)? {
        let plainKey = PlainKey(mix: key, encoding: format.encoding)
        if let existing = plain[plainKey] {
            if existing.lastTick &+ 1 != tick { existing.encoder.reset() }
            plain[plainKey]?.lastTick = tick
            return existing.encoder
        }
        guard let created = format.makePlainEncoder() else { return nil }
        plain[plainKey] = (created, tick)
        return created
    }

    /// Forgets encoders of mixes that no longer exist.
    mutating func retain(_ keys: Set<Key>) {
        for key in encoders.keys where !keys.contains(key) { encoders.removeValue(forKey: key) }
        for key in plain.keys where !keys.contains(key.mix) { plain.removeValue(forKey: key) }
        for id in heardFullEncode.keys where !keys.contains(.minusOne(id)) { heardFullEncode.removeValue(forKey: id) }
    }
}
