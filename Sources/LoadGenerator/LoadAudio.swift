import AudioMixer
import Foundation

/// Opus audio a simulated participant sends, encoded once at start and replayed in a loop, so
/// the generator spends its CPU on the protocol, not on encoding.
///
/// Three kinds: *talkers* send a speech-like signal (a 130 Hz voice with harmonics up to
/// 650 Hz, syllables at ~3 Hz and a 200 ms pause every second), which never touches 1 kHz;
/// the room's *burst talker* talks the same way and marks each second with 200 ms of a 1 kHz
/// tone over its voice, just after its pause (the onsets the probe listeners time for
/// mouth-to-ear latency); *silent* participants send encoded
/// silence with an RFC 6464 level of -127 dBov, as a muted-by-silence browser does.
struct LoadAudio: Sendable {
    /// One Opus payload per 20 ms frame, and its RFC 6464 level (-dBov, 0…127).
    let frames: [[UInt8]]
    let levels: [UInt8]
    /// Frames (indices) that start a tone burst.
    let burstStarts: Set<Int>
    /// Whether this is a silent participant's audio: the only kind a client pauses in DTX.
    var isSilence = false

    static let burstFrequency = 1_000.0
    static let sampleRate = 48_000.0

    enum Kind { case burst, speech, silence }

    static func make(_ kind: Kind) throws -> LoadAudio {
        let encoder = try OpusEncoder(bitrate: 32_000, complexity: 5)
        let count = switch kind {
        case .burst: 150
        case .speech: 150
        case .silence: 1
        }
        var frames: [[UInt8]] = []
        var levels: [UInt8] = []
        for index in 0..<count {
            let pcm = frame(kind, index: index)
            frames.append(try encoder.encode(pcm))
            levels.append(AudioLevel.rfc6464Level(dBov: AudioLevel.dBov(of: pcm)))
        }
        return LoadAudio(frames: frames, levels: levels, burstStarts: kind == .burst ? [0, 50, 100] : [],
                         isSilence: kind == .silence)
    }

    /// 960 samples of the kind's signal for frame `index` of its loop.
    static func frame(_ kind: Kind, index: Int) -> [Int16] {
        (0..<960).map { sample in
            let t = Double(index * 960 + sample) / sampleRate
            let value: Double
            switch kind {
            case .burst:
                value = speech(t, index: index) + (index % 50 < 10 ? 0.3 * sin(2 * .pi * burstFrequency * t) : 0)
            case .speech:
                value = speech(t, index: index)
            case .silence:
                value = 0
            }
            return Int16(max(-32_767, min(32_767, value * 32_767)))
        }
    }

    /// The speech-like voice at time `t` of frame `index`: syllables (a raised sine at ~3 Hz)
    /// and a 200 ms pause at the end of every second.
    private static func speech(_ t: Double, index: Int) -> Double {
        let syllable = max(0, sin(2 * .pi * 3.1 * t))
        let pause = (index % 50) >= 40 ? 0.0 : 1.0
        var voice = 0.0
        for harmonic in 1...5 { voice += sin(2 * .pi * 130 * Double(harmonic) * t) / Double(harmonic) }
        return 0.12 * syllable * pause * voice
    }

    /// Power at the burst frequency relative to the frame's power (Goertzel), 0…1: how a probe
    /// listener tells the burst talker's tone from the other talkers in the mix.
    static func burstShare(_ pcm: UnsafeBufferPointer<Int16>) -> Double {
        let omega = 2 * Double.pi * burstFrequency / sampleRate
        let coefficient = 2 * cos(omega)
        var s1 = 0.0, s2 = 0.0, energy = 0.0
        for sample in pcm {
            let x = Double(sample)
            energy += x * x
            let s0 = x + coefficient * s1 - s2
            s2 = s1
            s1 = s0
        }
        guard energy > 1e3 * Double(pcm.count) else { return 0 }  // below ~ -50 dBFS: silence
        let power = s1 * s1 + s2 * s2 - coefficient * s1 * s2
        return min(1, 2 * power / (Double(pcm.count) * energy))
    }
}
