import ChorusCore
import Testing

import AudioMixer

/// Rough costs of the per-tick audio work, printed for the capacity model (run with
/// `swift test -c release --filter CodecCost` for meaningful numbers). The bounds only catch
/// gross regressions; timing on a shared CI machine is too noisy for anything tighter.
@Suite("Codec cost")
struct CodecCostTests {
    /// Median of `rounds` timings of `body`, in microseconds.
    private func median(rounds: Int = 300, _ body: (Int) throws -> Void) rethrows -> Double {
        let clock = ContinuousClock()
        var samples: [Double] = []
        samples.reserveCapacity(rounds)
        for round in 0..<rounds {
            let start = clock.now
            try body(round)
            let elapsed = clock.now - start
            samples.append(Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6)
        }
        samples.sort()
        return samples[samples.count / 2]
    }

    /// 20 ms frames of a speech-like signal: a harmonic-rich tone with a syllable envelope.
    private static let speechLike: [[Int16]] = (0..<50).map { frame in
        let base = Signal.sineFrame(frame, frequency: 180, amplitude: 0.25)
        let second = Signal.sineFrame(frame, frequency: 720, amplitude: 0.12)
        let third = Signal.sineFrame(frame, frequency: 2_300, amplitude: 0.05)
        let envelope = 0.3 + 0.7 * Double((frame % 12) < 8 ? 1 : 0)
        return (0..<960).map { Int16(Double(Int(base[$0]) + Int(second[$0]) + Int(third[$0])) * envelope) }
    }

    @Test("Opus encode at complexity 0, 5 and 10; decode, PLC, FEC; jitter buffer tick")
    func costs() throws {
        var payload = [UInt8](repeating: 0, count: AudioCodecFormat.maxPayloadBytes)
        var results: [String] = []
        for complexity in [0, 5, 10] {
            let encoder = try OpusEncoder(bitrate: 32_000, complexity: complexity, inbandFEC: true, expectedPacketLossPercent: 5)
            let cost = try median { round in
                _ = try Self.speechLike[round % 50].withUnsafeBufferPointer { pcm in
                    try payload.withUnsafeMutableBufferPointer { try encoder.encode(pcm, into: $0) }
                }
            }
            results.append("encode c\(complexity) \(String(format1: cost)) µs")
            #expect(cost < 5_000)
        }
        let encoder = try OpusEncoder(bitrate: 32_000, complexity: 5, inbandFEC: true, expectedPacketLossPercent: 5)
        let packets = try Self.speechLike.map { try encoder.encode($0) }
        let decoder = try OpusDecoder()
        var pcm = [Int16](repeating: 0, count: AudioCodecFormat.maxPacketSamples)
        let decode = try median { round in
            _ = try packets[round % 50].withUnsafeBufferPointer { input in
                try pcm.withUnsafeMutableBufferPointer { try decoder.decode(input, into: $0) }
            }
        }
        let conceal = try median { _ in
            _ = try pcm.withUnsafeMutableBufferPointer { try decoder.conceal(samples: 960, into: $0) }
        }
        let fec = try median { round in
            _ = try packets[round % 50].withUnsafeBufferPointer { input in
                try pcm.withUnsafeMutableBufferPointer { try decoder.decodeFEC(input, samples: 960, into: $0) }
            }
        }
        results.append("decode \(String(format1: decode)) µs, PLC \(String(format1: conceal)) µs, FEC \(String(format1: fec)) µs")
        results.append("jitter buffer insert+pop \(String(format1: jitterBufferTick())) µs, PCM chain tick \(String(format1: try chainTick(PCMCodec(), PCMCodec()))) µs, Opus chain tick \(String(format1: try chainTick(encoder, try OpusDecoder()))) µs")
        print("Codec cost (median): " + results.joined(separator: "; "))
        #expect(decode < 2_000 && conceal < 2_000 && fec < 2_000)
    }

    /// One packet in and one frame out of a bare jitter buffer.
    private func jitterBufferTick() -> Double {
        var buffer = AdaptiveJitterBuffer()
        let payload: [UInt8] = [1, 2, 3, 4]
        return median(rounds: 2_000) { round in
            let arrival = MediaTime(nanoseconds: 1_000_000_000 + UInt64(round) * 20_000_000)
            buffer.insert(sequenceNumber: UInt16(truncatingIfNeeded: round), timestamp: UInt32(round * 960),
                          payload: payload, arrival: arrival)
            _ = buffer.pop(now: arrival.adding(milliseconds: 45))
        }
    }

    /// One packet in and one decoded 20 ms frame out of the whole receive chain.
    private func chainTick(_ encoder: any AudioEncoder, _ decoder: any AudioDecoder) throws -> Double {
        let packets = try Self.speechLike.map { try encoder.encode($0) }
        var chain = JitterBufferedDecoder(decoder: decoder)
        var frame = [Int16](repeating: 0, count: 960)
        return median(rounds: 1_000) { round in
            let arrival = MediaTime(nanoseconds: 1_000_000_000 + UInt64(round) * 20_000_000)
            chain.insert(sequenceNumber: UInt16(truncatingIfNeeded: round), timestamp: UInt32(round * 960),
                         payload: packets[round % 50], arrival: arrival)
            _ = frame.withUnsafeMutableBufferPointer { chain.nextFrame(now: arrival.adding(milliseconds: 45), into: $0) }
        }
    }
}

extension String {
    /// One decimal, without Foundation.
    init(format1 value: Double) {
        let tenths = Int((value * 10).rounded())
        self = "\(tenths / 10).\(abs(tenths % 10))"
    }
}
