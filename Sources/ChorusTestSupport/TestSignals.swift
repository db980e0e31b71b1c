import Foundation

/// A phase-continuous test tone (at 48 kHz unless told otherwise), cut into frames: what a test
/// participant "says".
public struct TestTone: Sendable {
    public let frequency: Double
    /// Peak amplitude, full scale 1.0.
    public let amplitude: Double
    public let sampleRate: Double
    private var phase: Double = 0

    public init(frequency: Double, amplitude: Double, sampleRate: Double = 48_000) {
        self.frequency = frequency
        self.amplitude = amplitude
        self.sampleRate = sampleRate
    }

    public mutating func nextFrame(samples: Int = 960) -> [Int16] {
        var frame = [Int16](repeating: 0, count: samples)
        let step = 2 * Double.pi * frequency / sampleRate
        for index in frame.indices {
            frame[index] = Int16((amplitude * 32767 * sin(phase)).rounded())
            phase += step
        }
        phase = phase.truncatingRemainder(dividingBy: 2 * Double.pi)
        return frame
    }

    public mutating func nextFloatFrame() -> [Float] {
        nextFrame().map { Float($0) / 32768 }
    }
}

/// Spectral measurements: what a test listener actually hears.
public enum Spectrum {
    /// Power of `frequency` in `samples` (Goertzel over a Hann window), in dB relative to full
    /// scale; a silent signal gives a very low finite number.
    public static func powerDB(of samples: [Int16], at frequency: Double, sampleRate: Double = 48_000) -> Double {
        let n = samples.count
        guard n > 1 else { return -300 }
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

/// Every proper prefix of `bytes`, shortest first: what the malformed-input tests feed parsers.
public func truncations(of bytes: [UInt8]) -> [[UInt8]] {
    (0..<bytes.count).map { Array(bytes.prefix($0)) }
}
