import ChorusCore
import Foundation
import Testing

import AudioMixer

/// The receive chain (jitter buffer + decoder + PCM queue) that hands the mixer one 20 ms
/// frame per tick whatever the sender's packet duration.
@Suite("Jitter-buffered decoder")
struct JitterBufferedDecoderTests {
    /// Sends a ramp (sample n has value n % 30000) in PCM packets of `packetSamples`, runs
    /// `ticks` 20 ms ticks, and returns the concatenated output.
    private func runRamp(packetSamples: Int, ticks: Int, lose: Set<Int> = []) throws
        -> (pcm: [Int16], chain: JitterBufferedDecoder, kinds: [JitterBufferedDecoder.FrameKind])
    {
        let encoder = PCMCodec()
        var chain = JitterBufferedDecoder(decoder: PCMCodec())
        let interval = UInt64(packetSamples) * 1_000_000_000 / 48_000
        let packetCount = ticks * 960 / packetSamples
        var packets: [(arrival: UInt64, index: Int, payload: [UInt8])] = []
        for index in 0..<packetCount where !lose.contains(index) {
            let samples = (0..<packetSamples).map { Int16((index * packetSamples + $0) % 30_000) }
            packets.append((1_000_000_000 + UInt64(index) * interval + 30_000_000, index, try encoder.encode(samples)))
        }
        var output: [Int16] = []
        var kinds: [JitterBufferedDecoder.FrameKind] = []
        var frame = [Int16](repeating: 0, count: 960)
        var next = 0
        for tick in 0..<ticks {
            let now = 1_007_000_000 + UInt64(tick) * 20_000_000
            while next < packets.count, packets[next].arrival <= now {
                let packet = packets[next]
                chain.insert(
                    sequenceNumber: UInt16(truncatingIfNeeded: packet.index),
                    timestamp: UInt32(truncatingIfNeeded: packet.index * packetSamples),
                    payload: packet.payload, arrival: MediaTime(nanoseconds: packet.arrival))
                next += 1
            }
            kinds.append(frame.withUnsafeMutableBufferPointer { chain.nextFrame(now: MediaTime(nanoseconds: now), into: $0) })
            output += frame
        }
        return (output, chain, kinds)
    }

    @Test("10, 20, 40 and 60 ms packets all come out as one continuous signal", arguments: [480, 960, 1_920, 2_880])
    func packetDurations(packetSamples: Int) throws {
        let (pcm, chain, kinds) = try runRamp(packetSamples: packetSamples, ticks: 300)
        let start = try #require(pcm.firstIndex { $0 != 0 })
        // From the first sample of audio, 4 s of the ramp without a gap or a repeat.
        let played = pcm[(start - 1)..<(start - 1 + 4 * 48_000)]
        let mismatch = played.indices.first { played[$0] != Int16(($0 - played.startIndex) % 30_000) }
        #expect(mismatch == nil, "first mismatch at \(String(describing: mismatch)): \(chain.jitterBuffer.statistics)")
        // Every one of those ticks says it is audio, also those served from what is left of a
        // 40 or 60 ms packet (the room hands a `.silence` tick to nobody).
        let ticks = kinds[(start / 960)..<((start + 4 * 48_000) / 960)]
        #expect(ticks.allSatisfy { $0 == .audio }, "\(ticks.filter { $0 != .audio }.count) ticks not audio")
        #expect(chain.decodeErrors == 0)
        #expect(chain.jitterBuffer.statistics.lost == 0)
        #expect(chain.jitterBuffer.statistics.droppedFrames + chain.jitterBuffer.statistics.insertedFrames == 0)
    }

    @Test("Opus end to end: a lost packet is recovered from FEC, garbage is concealed")
    func opusWithLossAndGarbage() throws {
        let encoder = try OpusEncoder(bitrate: 32_000, inbandFEC: true, expectedPacketLossPercent: 10)
        var chain = JitterBufferedDecoder(decoder: try OpusDecoder())
        var kinds: [JitterBufferedDecoder.FrameKind] = []
        var output: [Int16] = []
        var frame = [Int16](repeating: 0, count: 960)
        for index in 0..<150 {
            var payload = try encoder.encode(Signal.sineFrame(index))
            if index == 120 { payload = [0xFF, 0xFF, 0xFF, 0xFF, 0x00] }  // not a valid Opus packet
            if index != 100 {  // lost
                chain.insert(
                    sequenceNumber: UInt16(index), timestamp: UInt32(index * 960), payload: payload,
                    arrival: MediaTime(nanoseconds: 1_000_000_000 + UInt64(index) * 20_000_000 + 30_000_000))
            }
            let now = MediaTime(nanoseconds: 1_007_000_000 + UInt64(index) * 20_000_000)
            kinds.append(frame.withUnsafeMutableBufferPointer { chain.nextFrame(now: now, into: $0) })
            output += frame
        }
        let statistics = chain.jitterBuffer.statistics
        #expect(statistics.fecRecoveries == 1 && statistics.lost == 1)
        #expect(chain.decodeErrors == 1)
        #expect(kinds.filter { $0 == .concealed }.count == 1, "only the garbage frame is concealed")
        #expect(kinds.prefix(4).allSatisfy { $0 == .silence })
        #expect(abs(Signal.zeroCrossingFrequency(output[(20 * 960)..<(118 * 960)]) - 440) < 1)
    }

    /// A DTX sender (libopus with DTX, sending only the packets longer than 2 bytes, as
    /// browsers do): 1 s of speech-level tone, then 3 s of quiet background noise. With comfort
    /// noise on, the pause is filled with noise near the background's level; without, it is
    /// mostly digital silence.
    @Test("DTX pauses become comfort noise near the sender's background level, when asked")
    func comfortNoiseDuringDTX() throws {
        let encoder = try OpusEncoder(bitrate: 32_000, dtx: true)
        var generator = SplitMix64(seed: 7)
        var input: [[Int16]] = []
        for index in 0..<200 {
            if index < 50 {
                input.append(Signal.sineFrame(index, amplitude: 0.3))
            } else {
                input.append((0..<960).map { _ in Int16.random(in: -60...60, using: &generator) })
            }
        }
        var withNoise = JitterBufferedDecoder(decoder: try OpusDecoder())
        var without = JitterBufferedDecoder(decoder: try OpusDecoder())
        var heard: (noise: [Int16], zeros: [Int16]) = ([], [])
        var kinds: [JitterBufferedDecoder.FrameKind] = []
        var frame = [Int16](repeating: 0, count: 960)
        var sequence: UInt16 = 0
        var sent = 0
        for (index, pcm) in input.enumerated() {
            let payload = try encoder.encode(pcm)
            if payload.count > 2 {
                sent += 1
                for chain in [0, 1] {
                    let arrival = MediaTime(nanoseconds: 1_000_000_000 + UInt64(index) * 20_000_000 + 30_000_000)
                    if chain == 0 {
                        withNoise.insert(sequenceNumber: sequence, timestamp: UInt32(index * 960), payload: payload, arrival: arrival)
                    } else {
                        without.insert(sequenceNumber: sequence, timestamp: UInt32(index * 960), payload: payload, arrival: arrival)
                    }
                }
                sequence &+= 1
            }
            let now = MediaTime(nanoseconds: 1_007_000_000 + UInt64(index) * 20_000_000)
            kinds.append(frame.withUnsafeMutableBufferPointer { withNoise.nextFrame(now: now, into: $0, comfortNoise: true) })
            heard.noise += frame
            _ = frame.withUnsafeMutableBufferPointer { without.nextFrame(now: now, into: $0) }
            heard.zeros += frame
        }
        #expect(sent < 120, "the encoder went into DTX (\(sent) of 200 frames sent)")
        // The last 2 s: the pause, well after the encoder's DTX hangover.
        let pause = (100 * 960)..<(200 * 960)
        let background = Signal.rms(input[100...].joined().map { $0 }[...])
        let level = Signal.decibels(Signal.rms(heard.noise[pause]) / background)
        #expect(abs(level) < 12, "comfort noise at \(level) dB from the background")
        #expect(kinds.suffix(100).filter { $0 == .comfortNoise }.count > 50)
        let silentFrames = stride(from: pause.lowerBound, to: pause.upperBound, by: 960).filter { start in
            heard.zeros[start..<(start + 960)].allSatisfy { $0 == 0 }
        }
        #expect(silentFrames.count > 50, "without comfort noise the pause is digital silence")
    }

    /// A quiet participant is not decoded (the room's choice, from its client's level): zeros
    /// while skipped, the jitter buffer's timeline unbroken, and clean audio again as soon as
    /// decoding resumes (the decoder restarts instead of decoding on stale state).
    /// The room's form (`into: inout [Int16]`) leaves silent ticks unwritten and notes the
    /// silence without writing the queue; it must still play exactly what the pointer form
    /// plays: a sender with DTX pauses, losses, packets of 10, 20, 30 and 60 ms (so a tick can
    /// end inside a packet, and start with what was left of one), and stretches not decoded.
    @Test("the room's form plays what the pointer form plays, through pauses, losses and odd packets")
    func inoutFormMatchesPointerForm() throws {
        let encoder = PCMCodec()
        var chains = [JitterBufferedDecoder(decoder: PCMCodec()), JitterBufferedDecoder(decoder: PCMCodec())]
        var frame = [Int16](repeating: 0, count: 960)
        var roomFrame = [Int16](repeating: 7, count: 960)
        let durations = [480, 960, 1_440, 2_880, 480, 960]
        var sequence: UInt16 = 0, captured = 0, sent = 0, packets = 0
        var audible = 0
        for tick in 0..<400 {
            // The microphone runs on; talk for 600 ms of each second, pause (DTX: nothing sent).
            captured += 960
            let talking = tick % 50 < 30
            if !talking { sent = captured }
            while talking, captured - sent >= durations[packets % durations.count] {
                let samples = durations[packets % durations.count]
                let pcm = (0..<samples).map { Int16(truncatingIfNeeded: sent + $0) | 1 }
                let arrival = MediaTime(nanoseconds: 1_030_000_000 + UInt64(sent + samples) * 1_000_000 / 48)
                if packets % 23 != 7 {  // lost
                    for index in chains.indices {
                        chains[index].insert(sequenceNumber: sequence, timestamp: UInt32(sent), payload: try encoder.encode(pcm),
                                             arrival: arrival)
                    }
                }
                sequence &+= 1
                packets += 1
                sent += samples
            }
            let now = MediaTime(nanoseconds: 1_007_000_000 + UInt64(tick) * 20_000_000)
            let decode = !(200..<230).contains(tick)
            let kind = frame.withUnsafeMutableBufferPointer { chains[0].nextFrame(now: now, into: $0, decode: decode) }
            let roomKind = chains[1].nextFrame(now: now, into: &roomFrame, decode: decode)
            #expect(kind == roomKind, "tick \(tick)")
            switch kind {
            case .silence, .skipped:
                #expect(frame.allSatisfy { $0 == 0 }, "tick \(tick): a silent tick is zeros")
            default:
                audible += 1
                #expect(frame == roomFrame, "tick \(tick): \(kind) differs")
            }
        }
        #expect(audible > 150)
    }

    @Test("skipped ticks are zeros, and decoding resumes cleanly on the same timeline")
    func skippedDecodes() throws {
        let encoder = try OpusEncoder(bitrate: 32_000)
        var chain = JitterBufferedDecoder(decoder: try OpusDecoder())
        var kinds: [JitterBufferedDecoder.FrameKind] = []
        var output: [Int16] = []
        var frame = [Int16](repeating: 0, count: 960)
        for index in 0..<150 {
            chain.insert(
                sequenceNumber: UInt16(index), timestamp: UInt32(index * 960),
                payload: try encoder.encode(Signal.sineFrame(index)),
                arrival: MediaTime(nanoseconds: 1_000_000_000 + UInt64(index) * 20_000_000 + 30_000_000))
            let now = MediaTime(nanoseconds: 1_007_000_000 + UInt64(index) * 20_000_000)
            let decode = !(40..<100).contains(index)
            kinds.append(frame.withUnsafeMutableBufferPointer { chain.nextFrame(now: now, into: $0, decode: decode) })
            output += frame
        }
        #expect(kinds[42..<100].allSatisfy { $0 == .skipped })
        #expect(output[(42 * 960)..<(100 * 960)].allSatisfy { $0 == 0 })
        #expect(kinds[103...].allSatisfy { $0 == .audio })
        // From the second decoded frame on, the 440 Hz sine at its full level again.
        let resumed = output[(104 * 960)..<(150 * 960)]
        #expect(abs(Signal.zeroCrossingFrequency(resumed) - 440) < 1)
        #expect(Signal.rms(resumed) > 0.5 * 32_767 * 0.707 * 0.8)
        let statistics = chain.jitterBuffer.statistics
        #expect(statistics.lost == 0 && statistics.late == 0 && statistics.concealedFrames == 0)
    }

    /// The room relays a sender's packet unchanged when a listener's mix is that sender alone,
    /// so the chain must say exactly which packet a tick played, and only when one whole
    /// packet stands for it.
    @Test("a tick played from exactly one 20 ms packet exposes that packet for relaying, other ticks none",
          arguments: [480, 960, 2_880])
    func relayablePayload(packetSamples: Int) throws {
        let encoder = try OpusEncoder(bitrate: 32_000)
        var chain = JitterBufferedDecoder(decoder: try OpusDecoder())
        var frame = [Int16](repeating: 0, count: 960)
        var sent: [UInt32: [UInt8]] = [:]
        var relayed: [(tick: Int, payload: [UInt8])] = []
        let lost = 30 * 960 / packetSamples
        for tick in 0..<60 {
            let now = MediaTime(nanoseconds: 1_007_000_000 + UInt64(tick) * 20_000_000)
            // Packets of the sender's 20 ms tick, arriving 30 ms after they were captured.
            for index in (tick * 960 / packetSamples)..<((tick + 1) * 960 / packetSamples) {
                let pcm = (0..<packetSamples).map { Int16(8_000 * sin(Double(index * packetSamples + $0) * 0.0576)) }
                let payload = try encoder.encode(pcm)
                sent[UInt32(index * packetSamples)] = payload
                guard index != lost else { continue }
                chain.insert(sequenceNumber: UInt16(index), timestamp: UInt32(index * packetSamples), payload: payload,
                             arrival: MediaTime(nanoseconds: 1_000_000_000 + UInt64(index * packetSamples) * 1_000_000 / 48))
            }
            let kind = frame.withUnsafeMutableBufferPointer { chain.nextFrame(now: now, into: $0) }
            if let payload = chain.relayablePayload {
                #expect(kind == .audio)
                relayed.append((tick, payload))
            }
        }
        guard packetSamples == 960 else {
            #expect(relayed.isEmpty, "no single packet stands for a tick of \(packetSamples)-sample packets")
            return
        }
        // Every tick from the start of playout but the lost packet's (concealed or FEC), each
        // with the packet of its own place in the stream, in order.
        #expect(relayed.count >= 50)
        let sentInOrder = sent.sorted { $0.key < $1.key }.map(\.value)
        let positions = relayed.compactMap { entry in sentInOrder.firstIndex(of: entry.payload) }
        #expect(positions.count == relayed.count)
        #expect(positions == positions.sorted() && Set(positions).count == positions.count)
        #expect(!positions.contains(lost) && positions.contains(lost - 1) && positions.contains(lost + 2))
    }

    /// A lone talker's packets are relayed, so the room holds them undecoded and decodes one
    /// only when a mix needs it. Decoded on request within its tick, the result must be what
    /// an immediate decode gives (the decoder's state is intact); left undecoded, the next
    /// decode must restart the decoder rather than continue from stale state.
    @Test("a whole packet held undecoded is the tick's relayable packet, decoded on request as it would have been",
          arguments: [480, 960])
    func deferredDecodes(packetSamples: Int) throws {
        let encoder = try OpusEncoder(bitrate: 32_000)
        var direct = JitterBufferedDecoder(decoder: try OpusDecoder())
        var deferring = JitterBufferedDecoder(decoder: try OpusDecoder())
        var frame = [Int16](repeating: 0, count: 960)
        var expected: [Int16] = []
        var output: [Int16] = []
        var kinds: [JitterBufferedDecoder.FrameKind] = []
        let perTick = 960 / packetSamples
        for tick in 0..<150 {
            for index in (tick * perTick)..<((tick + 1) * perTick) {
                let pcm = (0..<packetSamples).map { Int16(16_000 * sin(Double(index * packetSamples + $0) * 2 * .pi * 440 / 48_000)) }
                let payload = try encoder.encode(pcm)
                let arrival = MediaTime(nanoseconds: 1_030_000_000 + UInt64(index * packetSamples) * 1_000_000 / 48)
                let sequence = UInt16(truncatingIfNeeded: index)
                let timestamp = UInt32(index * packetSamples)
                direct.insert(sequenceNumber: sequence, timestamp: timestamp, payload: payload, arrival: arrival)
                deferring.insert(sequenceNumber: sequence, timestamp: timestamp, payload: payload, arrival: arrival)
            }
            let now = MediaTime(nanoseconds: 1_007_000_000 + UInt64(tick) * 20_000_000)
            _ = frame.withUnsafeMutableBufferPointer { direct.nextFrame(now: now, into: $0) }
            expected += frame
            frame = [Int16](repeating: 0, count: 960)
            var kind = frame.withUnsafeMutableBufferPointer { deferring.nextFrame(now: now, into: $0, deferDecode: true) }
            kinds.append(kind)
            #expect(deferring.relayablePayload == direct.relayablePayload, "tick \(tick)")
            if kind == .undecoded, !(40..<100).contains(tick) {
                kind = frame.withUnsafeMutableBufferPointer { deferring.decodeDeferred(into: $0) }
                #expect(kind == .audio)
            }
            output += frame
        }
        guard packetSamples == 960 else {
            #expect(!kinds.contains(.undecoded), "no single packet stands for a tick of \(packetSamples)-sample packets")
            #expect(output == expected)
            return
        }
        // Silence until playout starts (the buffer's initial delay), then every tick one packet.
        let start = try #require(kinds.firstIndex(of: .undecoded))
        #expect(start < 10 && kinds[..<start].allSatisfy { $0 == .silence })
        #expect(kinds[start...].allSatisfy { $0 == .undecoded }, "\(kinds)")
        // Decoded on request: bit-exact with the direct chain until the undecoded stretch.
        #expect(output[0..<(40 * 960)] == expected[0..<(40 * 960)])
        #expect(output[(40 * 960)..<(100 * 960)].allSatisfy { $0 == 0 })
        // After it, a restarted decoder primed with the last held packet: its first frame is
        // already close to the continuous decode (14.9 dB here; unprimed, 4.5 dB).
        let first = 100 * 960..<101 * 960
        let error = zip(output[first], expected[first]).map { Double(Int($0) - Int($1)) }
        let snr = 10 * log10(pow(Signal.rms(expected[first]), 2) / max(1, error.map { $0 * $0 }.reduce(0, +) / 960))
        #expect(snr > 10, "first frame after the undecoded stretch: \(snr) dB from the continuous decode")
        // And the sine at its full level from the second frame on.
        let resumed = output[(101 * 960)..<(150 * 960)]
        #expect(abs(Signal.zeroCrossingFrequency(resumed) - 440) < 1)
        #expect(Signal.rms(resumed) > 16_000 * 0.707 * 0.8)
        let statistics = deferring.jitterBuffer.statistics
        #expect(statistics.lost == 0 && statistics.late == 0 && statistics.concealedFrames == 0)
        #expect(deferring.decodeErrors == 0)
    }
}
