import AudioMixer
import ChorusCore
import ChorusTestSupport
import Foundation

/// The shared test tone and spectrum measure (`ChorusTestSupport`) under this suite's names.
typealias MixerTestTone = TestTone
typealias MixerTestSpectrum = Spectrum

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
