import AudioMixer
import Testing

@Suite("SoftLimiter: no hard clipping, no wrapping, bit-exact when quiet")
struct SoftLimiterTests {
    /// `frames` frames of the sum of full-scale sines at `frequencies`, in `Float` (peaks near 3.0).
    private func loudSum(_ frequencies: [Double], frames: Int) -> [[Float]] {
        var tones = frequencies.map { MixerTestTone(frequency: $0, amplitude: 1) }
        return (0..<frames).map { _ in
            var sum = [Float](repeating: 0, count: 960)
            for index in tones.indices {
                for (position, sample) in tones[index].nextFloatFrame().enumerated() { sum[position] += sample }
            }
            return sum
        }
    }

    private func limit(_ frames: [[Float]], _ limiter: inout SoftLimiter) -> [Int16] {
        var output: [Int16] = []
        for frame in frames {
            var out = [Int16](repeating: 0, count: frame.count)
            frame.withUnsafeBufferPointer { input in
                out.withUnsafeMutableBufferPointer { limiter.process(input, into: $0) }
            }
            output += out
        }
        return output
    }

    /// Longest run of identical consecutive samples whose magnitude exceeds `above`.
    private func longestPlateau(_ samples: [Int16], above: Int16) -> Int {
        var longest = 0, run = 0
        for index in samples.indices {
            if abs(Int(samples[index])) > Int(above), index > 0, samples[index] == samples[index - 1] {
                run += 1
                longest = max(longest, run + 1)
            } else {
                run = 0
            }
        }
        return longest
    }

    @Test(arguments: [[440.0, 550, 660], [440, 440, 440], [300, 1_000, 3_000]])
    func threeFullScaleSinesHaveNoFlatTops(frequencies: [Double]) {
        var limiter = SoftLimiter()
        let output = limit(loudSum(frequencies, frames: 50), &limiter)
        let peak = output.map { abs(Int($0)) }.max()!
        #expect(peak < 32_767, "no sample reaches full scale")
        #expect(peak > 20_000, "the limiter must not just attenuate everything")
        // A sampled sine can repeat its peak value once; a clipped one repeats it for many samples.
        #expect(longestPlateau(output, above: 16_000) <= 2)
        #expect(limiter.gain < 0.35)
    }

    @Test func quietInputPassesUnchanged() {
        var limiter = SoftLimiter()
        var tone = MixerTestTone(frequency: 440, amplitude: 0.5)
        for _ in 0..<20 {
            let frame = tone.nextFrame()
            let output = limit([frame.map { Float($0) / 32768 }], &limiter)
            #expect(output == frame)
            #expect(limiter.gain == 1)
        }
    }

    @Test func gainRecoversAfterALoudBurst() {
        var limiter = SoftLimiter()
        _ = limit(loudSum([440, 550, 660], frames: 10), &limiter)
        #expect(limiter.gain < 0.5)
        _ = limit([[Float]](repeating: [Float](repeating: 0, count: 960), count: 100), &limiter)
        #expect(limiter.gain == 1)
    }

    @Test func nonFiniteAndHugeInputNeverTrapsOrWraps() {
        var limiter = SoftLimiter()
        let garbage: [Float] =
            [.nan, .infinity, -.infinity, 1e30, -1e30, 40, -40, .nan] + [Float](repeating: 5, count: 952)
        let output = limit([garbage, garbage], &limiter)
        #expect(output.allSatisfy { abs(Int($0)) < 32_767 })
        #expect(output[0] == 0 && output[1] == 0)
        #expect(limiter.envelope.isFinite)
        var inPlace = garbage
        inPlace.withUnsafeMutableBufferPointer { limiter.process($0) }
        #expect(inPlace.allSatisfy { $0.isFinite && abs($0) < 0.98 })
    }

    @Test func mismatchedBuffersProcessTheShorterLength() {
        var limiter = SoftLimiter()
        let input: [Float] = [0.1, 0.2, 0.3]
        var output = [Int16](repeating: 7, count: 5)
        input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { limiter.process(source, into: $0) }
        }
        #expect(output == [3277, 6554, 9830, 7, 7])
    }
}
