#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Test signals and the measurements the codec tests make on them.
enum Signal {
    static let rate = 48_000.0

    /// `count` samples of a sine at `frequency` Hz and `amplitude` (of full scale), from sample `start`.
    static func sine(frequency: Double, amplitude: Double = 0.5, start: Int = 0, count: Int) -> [Int16] {
        (0..<count).map { index in
            let phase = 2 * Double.pi * frequency * Double(start + index) / rate
            return Int16((sin(phase) * amplitude * 32_767).rounded())
        }
    }

    /// One 20 ms frame (`index`) of a continuous sine.
    static func sineFrame(_ index: Int, frequency: Double = 440, amplitude: Double = 0.5) -> [Int16] {
        sine(frequency: frequency, amplitude: amplitude, start: index * 960, count: 960)
    }

    /// Frequency estimated from rising zero crossings (interpolated between samples).
    static func zeroCrossingFrequency(_ samples: ArraySlice<Int16>) -> Double {
        var crossings: [Double] = []
        var previous = samples.first ?? 0
        var position = 0
        for sample in samples.dropFirst() {
            position += 1
            if previous < 0, sample >= 0 {
                let fraction = Double(-previous) / Double(Int(sample) - Int(previous))
                crossings.append(Double(position - 1) + fraction)
            }
            previous = sample
        }
        guard let first = crossings.first, let last = crossings.last, crossings.count > 1 else { return 0 }
        return Double(crossings.count - 1) / ((last - first) / rate)
    }

    static func rms(_ samples: ArraySlice<Int16>) -> Double {
        guard !samples.isEmpty else { return 0 }
        let sum = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
        return (sum / Double(samples.count)).squareRoot()
    }

    static func decibels(_ ratio: Double) -> Double { 20 * log10(max(ratio, 1e-12)) }

    /// Root-mean-square difference between `a[offset…]` and `b`.
    static func rmsError(_ a: [Int16], _ b: [Int16], offset: Int, range: Range<Int>) -> Double {
        var sum = 0.0
        var count = 0
        for index in range where index + offset >= 0 && index + offset < a.count && index < b.count {
            let difference = Double(a[index + offset]) - Double(b[index])
            sum += difference * difference
            count += 1
        }
        return count == 0 ? .infinity : (sum / Double(count)).squareRoot()
    }

    /// The codec delay: the shift of `decoded` against `original` with the least error.
    static func bestLag(decoded: [Int16], original: [Int16], range: Range<Int>, maxLag: Int = 1_200) -> Int {
        var best = (lag: 0, error: Double.infinity)
        for lag in 0...maxLag {
            let error = rmsError(decoded, original, offset: lag, range: range)
            if error < best.error { best = (lag, error) }
        }
        return best.lag
    }
}

