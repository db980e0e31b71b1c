/// Changes the sample rate of one mono stream by an integer factor: up from a member's rate
/// (8, 16 or 24 kHz) to the mixer's 48 kHz, or down from 48 kHz to the member's. A polyphase
/// FIR filter (a Blackman-windowed sinc, `tapsPerPhase` taps per output phase) removes the
/// images of upsampling and the aliases of downsampling: a plain sample-and-hold or linear
/// interpolation leaves them audible (a 1 kHz tone upsampled from 8 kHz by repetition puts
/// images at 7 and 9 kHz only ~12 dB down; here they are more than 60 dB down).
///
/// Stateful: it keeps the last input samples of the previous frame, so a stream cut into 20 ms
/// frames is filtered as one signal. One per stream (a sender's decoder, a mix encoder), driven
/// on the room's queue; not thread-safe. Never traps on any input length: output space the
/// caller did not give is not written.
public struct IntegerResampler: Sendable {
    /// The ratio of the higher rate to the lower one (48 kHz / the member's rate).
    public let factor: Int
    /// Filter taps per phase: the filter is `factor × tapsPerPhase` long.
    public static let tapsPerPhase = 24
    /// The prototype filter, `factor × tapsPerPhase` taps, cut off at 0.9 of the lower rate's
    /// Nyquist frequency (3.6 kHz for 8 kHz), its gain `factor` at DC so that upsampled
    /// audio keeps its level.
    private let taps: [Float]
    /// The last input samples, twice over (see `push`): `tapsPerPhase` of them upsampling, the
    /// whole filter length downsampling. One resampler goes one way only.
    private var ring: [Float]
    private var cursor = 0

    /// nil unless `factor` is 1…12 (48 kHz over 4 kHz at most).
    public init?(factor: Int) {
        guard (1...12).contains(factor) else { return nil }
        self.factor = factor
        taps = Self.lowPass(length: factor * Self.tapsPerPhase, factor: factor)
        ring = [Float](repeating: 0, count: 2 * factor * Self.tapsPerPhase)
    }

    /// `input` at the lower rate into `output` at the higher: `input.count × factor` samples
    /// (fewer if `output` is shorter); returns how many were written.
    public mutating func upsample(_ input: UnsafeBufferPointer<Int16>, into output: UnsafeMutableBufferPointer<Int16>)
        -> Int
    {
        let phases = factor, perPhase = Self.tapsPerPhase
        var written = 0
        for sample in input {
            push(Float(sample), window: perPhase)
            let newest = cursor + perPhase - 1
            for phase in 0..<phases where written < output.count {
                var sum: Float = 0
                for k in 0..<perPhase { sum += taps[k * phases + phase] * ring[newest - k] }
                output[written] = Self.clamp(sum)
                written += 1
            }
        }
        return written
    }

    /// `input` at the higher rate into `output` at the lower: one sample per `factor` inputs
    /// (fewer if `output` is shorter); returns how many were written. An input whose length is
    /// not a multiple of `factor` keeps its phase for the next call.
    public mutating func downsample(_ input: UnsafeBufferPointer<Int16>, into output: UnsafeMutableBufferPointer<Int16>)
        -> Int
    {
        let length = taps.count
        var written = 0
        for sample in input {
            push(Float(sample), window: length)
            pending += 1
            guard pending == factor else { continue }
            pending = 0
            guard written < output.count else { continue }
            let newest = cursor + length - 1
            var sum: Float = 0
            for k in 0..<length { sum += taps[k] * ring[newest - k] }
            output[written] = Self.clamp(sum / Float(factor))
            written += 1
        }
        return written
    }

    /// Appends one input to the ring: each sample is stored twice, `window` apart, so the last
    /// `window` inputs are always contiguous at `ring[cursor..<cursor + window]` (no shifting).
    private mutating func push(_ value: Float, window: Int) {
        cursor = cursor + 1 == window ? 0 : cursor + 1
        ring[cursor + window - 1] = value
        if cursor > 0 { ring[cursor - 1] = value } else { ring[2 * window - 1] = value }
    }

    /// Inputs since the last output, downsampling.
    private var pending = 0

    /// Forgets the stream: the next frame starts from silence.
    public mutating func reset() {
        for index in ring.indices { ring[index] = 0 }
        cursor = 0
        pending = 0
    }

    private static func clamp(_ value: Float) -> Int16 {
        guard value.isFinite else { return 0 }
        return Int16(max(-32_768, min(32_767, value.rounded())))
    }

    /// A windowed-sinc low-pass of `length` taps at 0.9 × π / `factor`, scaled to a DC gain of
    /// `factor` (each phase then sums to about 1).
    private static func lowPass(length: Int, factor: Int) -> [Float] {
        let cutoff = 0.9 / Double(factor)  // of the higher rate's Nyquist frequency
        let middle = Double(length - 1) / 2
        var taps = (0..<length).map { index -> Double in
            let x = Double(index) - middle
            let sinc = x == 0 ? cutoff : sin(Double.pi * cutoff * x) / (Double.pi * x)
            let phase = 2 * Double.pi * Double(index) / Double(length - 1)
            let blackman = 0.42 - 0.5 * cos(phase) + 0.08 * cos(2 * phase)
            return sinc * blackman
        }
        let sum = taps.reduce(0, +)
        if sum != 0 { taps = taps.map { $0 * Double(factor) / sum } }
        return taps.map(Float.init)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
