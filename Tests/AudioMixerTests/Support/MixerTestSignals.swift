import AudioMixer
import ChorusCore
import Foundation

/// Deterministic test signals at 48 kHz: phase-continuous tones cut into 960-sample frames, and
/// low-level noise standing in for comfort noise.
struct MixerTestTone {
    let frequency: Double
    /// Peak amplitude, full scale 1.0.
    let amplitude: Double
    private var phase: Double = 0

    init(frequency: Double, amplitude: Double) {
        self.frequency = frequency
        self.amplitude = amplitude
    }

    mutating func nextFrame() -> [Int16] {
        var frame = [Int16](repeating: 0, count: AudioMixerCore.frameLength)
        let step = 2 * Double.pi * frequency / 48_000
        for index in frame.indices {
            frame[index] = Int16((amplitude * 32767 * sin(phase)).rounded())
            phase += step
        }
        phase = phase.truncatingRemainder(dividingBy: 2 * Double.pi)
        return frame
    }

    mutating func nextFloatFrame() -> [Float] {
        nextFrame().map { Float($0) / 32768 }
    }
}

/// Uniform noise from a fixed-seed LCG, at a given RMS level.
struct MixerTestNoise {
    private var state: UInt64
    let rmsDBov: Double

    init(seed: UInt64, rmsDBov: Double) {
        state = seed
        self.rmsDBov = rmsDBov
    }

    mutating func nextFrame() -> [Int16] {
        // Uniform on [-a, a] has RMS a/√3.
        let amplitude = pow(10, rmsDBov / 20) * sqrt(3) * 32768
        return (0..<AudioMixerCore.frameLength).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let unit = Double(state >> 11) / Double(1 << 53) * 2 - 1
            return Int16(max(-32767, min(32767, (unit * amplitude).rounded())))
        }
    }
}

/// Spectral measurements for the tests.
enum MixerTestSpectrum {
    /// Power of `frequency` in `samples` (Goertzel over a Hann window), in dB relative to full
    /// scale; a silent signal gives a very low finite number.
    static func powerDB(of samples: [Int16], at frequency: Double, sampleRate: Double = 48_000) -> Double {
        let n = samples.count
        let coefficient = 2 * cos(2 * Double.pi * frequency / sampleRate)
        var s1 = 0.0, s2 = 0.0
        for (index, sample) in samples.enumerated() {
            let window = 0.5 - 0.5 * cos(2 * Double.pi * Double(index) / Double(n - 1))
            let s0 = window * Double(sample) / 32768 + coefficient * s1 - s2
            s2 = s1
            s1 = s0
        }
        let power = s1 * s1 + s2 * s2 - coefficient * s1 * s2
        return 10 * log10(max(power, 1e-30) / Double(n * n))
    }
}

/// The tests' stand-in for the codec seam: "encodes" 16-bit PCM as big-endian bytes and counts
/// the encodes, so a test can check the encoding cost of a tick.
struct PassThroughMixEncoder {
    private(set) var encodeCount = 0

    mutating func encode(_ samples: [Int16]) -> [UInt8] {
        encodeCount += 1
        var bytes: [UInt8] = []
        bytes.reserveCapacity(samples.count * 2)
        for sample in samples {
            let bits = UInt16(bitPattern: sample)
            bytes.append(UInt8(bits >> 8))
            bytes.append(UInt8(bits & 0xFF))
        }
        return bytes
    }

    static func decode(_ payload: ArraySlice<UInt8>) -> [Int16] {
        let bytes = Array(payload)
        return stride(from: 0, to: bytes.count - 1, by: 2).map {
            Int16(bitPattern: UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]))
        }
    }
}

extension MediaTime {
    /// The time of tick `index` (20 ms each) from an arbitrary origin.
    static func tick(_ index: Int) -> MediaTime {
        .milliseconds(1_000 + 20 * UInt64(index))
    }
}
