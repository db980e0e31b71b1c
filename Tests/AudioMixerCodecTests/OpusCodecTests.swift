import ChorusCore
import COpus
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

import AudioMixer

@Suite("Opus codec")
struct OpusCodecTests {
    /// Encodes `frames` 20 ms frames of a 440 Hz sine.
    private func encodeSine(_ encoder: OpusEncoder, frames: Int) throws -> [[UInt8]] {
        try (0..<frames).map { try encoder.encode(Signal.sineFrame($0)) }
    }

    @Test("a 440 Hz sine survives a round trip: same frequency, energy within 1.5 dB")
    func roundTripKeepsFrequencyAndEnergy() throws {
        let encoder = try OpusEncoder(bitrate: 32_000, complexity: 5)
        let decoder = try OpusDecoder()
        let packets = try encodeSine(encoder, frames: 100)
        var decoded: [Int16] = []
        for packet in packets {
            let pcm = try decoder.decode(packet)
            #expect(pcm.count == 960)
            decoded += pcm
        }
        let steady = decoded[(20 * 960)...]
        let frequency = Signal.zeroCrossingFrequency(steady)
        #expect(abs(frequency - 440) < 1, "decoded frequency \(frequency) Hz")
        let original = Signal.sine(frequency: 440, count: decoded.count)
        let gain = Signal.decibels(Signal.rms(steady) / Signal.rms(original[(20 * 960)...]))
        #expect(abs(gain) < 1.5, "energy changed by \(gain) dB")
        #expect(packets.allSatisfy { $0.count > 2 && $0.count < 200 })
    }

    @Test("the celt mode codes speech with CELT alone, voip with SILK or hybrid; both keep a sine")
    func modes() throws {
        // A voiced, speech-like frame: 180 Hz with harmonics at 720 Hz and 2.3 kHz.
        func speech(_ frame: Int) -> [Int16] {
            let parts = [(180.0, 0.25), (720.0, 0.12), (2_300.0, 0.05)].map { Signal.sineFrame(frame, frequency: $0.0, amplitude: $0.1) }
            return (0..<960).map { i in Int16(parts.reduce(0) { $0 + Int($1[i]) }) }
        }
        // The TOC byte's configuration (RFC 6716 §3.1): 0-11 SILK, 12-15 hybrid, 16-31 CELT.
        func configurations(_ mode: OpusEncoder.Mode) throws -> Set<UInt8> {
            let encoder = try OpusEncoder(bitrate: 32_000, complexity: 5, mode: mode)
            return Set(try (0..<50).map { try encoder.encode(speech($0))[0] >> 3 })
        }
        #expect(try configurations(.celt).allSatisfy { $0 >= 16 })
        #expect(try configurations(.voip).allSatisfy { $0 < 16 })
        let voip = try OpusEncoder(mode: .voip), celt = try OpusEncoder(mode: .celt)
        #expect(voip.mode == .voip && celt.mode == .celt)
        #expect(celt.lookaheadSamples < voip.lookaheadSamples, "\(celt.lookaheadSamples) vs \(voip.lookaheadSamples)")
        let decoder = try OpusDecoder()
        var decoded: [Int16] = []
        for index in 0..<60 { decoded += try decoder.decode(try celt.encode(Signal.sineFrame(index))) }
        let steady = decoded[(20 * 960)...]
        #expect(abs(Signal.zeroCrossingFrequency(steady) - 440) < 1)
        let gain = Signal.decibels(Signal.rms(steady) / Signal.rms(Signal.sine(frequency: 440, count: 960)[...]))
        #expect(abs(gain) < 1.5, "energy changed by \(gain) dB")
    }

    @Test("the float encode path agrees with the Int16 one")
    func floatEncode() throws {
        let encoder = try OpusEncoder(bitrate: 32_000)
        let decoder = try OpusDecoder()
        var decoded: [Int16] = []
        for index in 0..<50 {
            let frame = Signal.sineFrame(index).map { Float($0) / 32_768 }
            decoded += try decoder.decode(try encoder.encode(frame))
        }
        #expect(abs(Signal.zeroCrossingFrequency(decoded[(10 * 960)...]) - 440) < 1)
    }

    @Test("in-band FEC recovers a lost frame far better than concealment")
    func fecBeatsConcealment() throws {
        let encoder = try OpusEncoder(bitrate: 32_000, complexity: 5, inbandFEC: true, expectedPacketLossPercent: 10)
        let original = Signal.sine(frequency: 440, count: 60 * 960)
        let packets = try (0..<60).map { try encoder.encode(Array(original[($0 * 960)..<(($0 + 1) * 960)])) }
        let lostIndex = 40
        let clean = try decodeAll(packets, lost: nil, useFEC: false)
        let withFEC = try decodeAll(packets, lost: lostIndex, useFEC: true)
        let withPLC = try decodeAll(packets, lost: lostIndex, useFEC: false)
        let lag = Signal.bestLag(decoded: clean, original: original, range: (20 * 960)..<(30 * 960))
        let lostRange = (lostIndex * 960 - lag)..<((lostIndex + 1) * 960 - lag)
        let cleanError = Signal.rmsError(clean, original, offset: lag, range: lostRange)
        let fecError = Signal.rmsError(withFEC, original, offset: lag, range: lostRange)
        let plcError = Signal.rmsError(withPLC, original, offset: lag, range: lostRange)
        print("FEC test: codec lag \(lag) samples; RMS error on the lost frame: clean \(Int(cleanError)), FEC \(Int(fecError)), PLC \(Int(plcError)) (signal RMS 11585)")
        #expect(fecError * 5 < plcError, "FEC \(fecError) vs PLC \(plcError)")
        #expect(fecError < 4 * max(cleanError, 200), "FEC \(fecError) vs clean \(cleanError)")
    }

    /// Decodes all packets, losing `lost`, recovering it from the next packet's FEC or by PLC.
    private func decodeAll(_ packets: [[UInt8]], lost: Int?, useFEC: Bool) throws -> [Int16] {
        let decoder = try OpusDecoder()
        var out: [Int16] = []
        for (index, packet) in packets.enumerated() {
            if index == lost {
                out += useFEC ? try decoder.decodeFEC(packets[index + 1], samples: 960) : try decoder.conceal(samples: 960)
            } else {
                out += try decoder.decode(packet)
            }
        }
        return out
    }

    @Test("garbage payloads never trap: they throw or decode to bounded audio")
    func garbageNeverTraps() throws {
        let decoder = try OpusDecoder()
        var generator = SplitMix64(seed: 7)
        var rejected = 0
        for round in 0..<3_000 {
            let length = round < 20 ? round : Int.random(in: 1...1_500, using: &generator)
            let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            do {
                let pcm = try decoder.decode(payload)
                #expect(pcm.count <= AudioCodecFormat.maxPacketSamples)
                _ = try decoder.decodeFEC(payload, samples: 960)
            } catch {
                rejected += 1
            }
            _ = decoder.packetSamples(payload)  // must not trap either
        }
        #expect(rejected > 0)
        #expect(throws: AudioCodecError.invalidPayload(code: -4)) { try decoder.decode([]) }
        // After all that, the decoder still works.
        let encoder = try OpusEncoder()
        decoder.reset()
        #expect(try decoder.decode(try encoder.encode(Signal.sineFrame(0))).count == 960)
    }

    @Test("a stereo packet decodes to 960 mono samples")
    func stereoDecodesToMono() throws {
        var error: Int32 = 0
        let stereo = try #require(opus_encoder_create(48_000, 2, OPUS_APPLICATION_VOIP, &error))
        defer { opus_encoder_destroy(stereo) }
        let decoder = try OpusDecoder()
        var decoded: [Int16] = []
        for index in 0..<30 {
            let mono = Signal.sineFrame(index)
            let interleaved = mono.flatMap { [$0, $0] }
            var packet = [UInt8](repeating: 0, count: 1_500)
            let length = opus_encode(stereo, interleaved, 960, &packet, 1_500)
            try #require(length > 0)
            let pcm = try decoder.decode(Array(packet[..<Int(length)]))
            #expect(pcm.count == 960)
            decoded += pcm
        }
        #expect(abs(Signal.zeroCrossingFrequency(decoded[(10 * 960)...]) - 440) < 2)
    }

    @Test("settings are clamped, and 10/40/60 ms frames encode")
    func settingsAndFrameSizes() throws {
        let encoder = try OpusEncoder()
        encoder.bitrate = 10_000_000
        encoder.complexity = -3
        encoder.expectedPacketLossPercent = 400
        #expect(encoder.bitrate == 510_000)
        #expect(encoder.complexity == 0)
        #expect(encoder.expectedPacketLossPercent == 100)
        #expect(encoder.lookaheadSamples > 0)
        let decoder = try OpusDecoder()
        for samples in [480, 1_920, 2_880] {
            let packet = try encoder.encode(Signal.sine(frequency: 440, count: samples))
            #expect(decoder.packetSamples(packet) == samples)
            #expect(try decoder.decode(packet).count == samples)
        }
        #expect(throws: AudioCodecError.invalidFrameLength(1_000)) {
            try encoder.encode([Int16](repeating: 0, count: 1_000))
        }
    }

    /// The mixer's switch from the shared full mix to a speaker's own mix: an encoder that
    /// continues another's stream encodes, from the same input, exactly the packets the other
    /// would have (its state is a copy), while a fresh encoder does not.
    @Test("an encoder continuing another's stream encodes what the other would have")
    func continuedStreamIsTheSameStream() throws {
        let original = try OpusEncoder(bitrate: 32_000, complexity: 5, expectedPacketLossPercent: 0)
        _ = try encodeSine(original, frames: 25)
        let continued = try OpusEncoder(bitrate: 32_000, complexity: 5, expectedPacketLossPercent: 0)
        let fresh = try OpusEncoder(bitrate: 32_000, complexity: 5, expectedPacketLossPercent: 0)
        #expect(continued.continueStream(of: original))
        for index in 25..<35 {
            let frame = Signal.sineFrame(index)
            let expected = try original.encode(frame)
            #expect(try continued.encode(frame) == expected, "frame \(index) differs from the original stream's")
            if index == 25 { #expect(try fresh.encode(frame) != expected) }
        }
        #expect(!continued.continueStream(of: continued))
        let celt = try OpusEncoder(mode: .celt)
        #expect(!celt.continueStream(of: original), "a CELT-only encoder cannot continue a VoIP stream")
    }

    @Test("DTX: silence encodes to frames of at most 2 bytes")
    func dtxFrames() throws {
        let encoder = try OpusEncoder(dtx: true)
        let silence = [Int16](repeating: 0, count: 960)
        let sizes = try (0..<50).map { _ in try encoder.encode(silence).count }
        // After a short hangover only DTX frames, but for a comfort-noise update every 400 ms.
        #expect(sizes.suffix(30).filter { $0 <= 2 }.count >= 27, "sizes \(sizes)")
        #expect(encoder.isInDTX)
    }
}

@Suite("PCM codec")
struct PCMCodecTests {
    @Test("round trip is bit-exact, little-endian")
    func roundTrip() throws {
        let codec = PCMCodec()
        let frame: [Int16] = [0, 1, -1, .max, .min, 0x1234]
        let payload = try codec.encode(frame)
        #expect(payload == [0, 0, 1, 0, 0xFF, 0xFF, 0xFF, 0x7F, 0x00, 0x80, 0x34, 0x12])
        #expect(try codec.decode(payload) == frame)
        #expect(try codec.encode([Float(1.5), -2, .nan, 0.5]) == [0xFF, 0x7F, 0x00, 0x80, 0, 0, 0, 0x40])
    }

    @Test("odd payloads throw, FEC is unsupported, concealment is silence")
    func edges() throws {
        let codec = PCMCodec()
        #expect(throws: AudioCodecError.invalidPayload(code: -4)) { try codec.decode([1, 2, 3]) }
        #expect(throws: AudioCodecError.unsupported) { try codec.decodeFEC([0, 0], samples: 960) }
        #expect(try codec.conceal(samples: 960) == [Int16](repeating: 0, count: 960))
        #expect(!codec.supportsInbandFEC)
    }
}
