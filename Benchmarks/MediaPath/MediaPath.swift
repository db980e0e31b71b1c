import AudioMixer
import Benchmark
import ChorusCore
import RTCP
import RTP
import SRTP
import STUN
import VideoForwarder

/// What `make bench` checks: each benchmark's allocations (p90) against the figure stored in
/// Benchmarks/Thresholds (`make bench-thresholds` rewrites them), with a slack of two; times are
/// reported, never checked (this machine is too noisy for that).
var allocationThresholds: [BenchmarkMetric: BenchmarkThresholds] {
    [.mallocCountTotal: BenchmarkThresholds(absolute: [.p90: 2])]
}

/// Per-packet and per-tick costs of the media path: parsers, SRTP, the audio mixer's tick
/// (decode-free: frames are given; the distinct mixes are Opus-encoded as the room does), and
/// the room's whole audio tick with per-participant jitter buffers and decodes.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .mallocCountTotal, .throughput],
                                           maxDuration: .seconds(2), thresholds: allocationThresholds)

    // RFC 5769 §2.1 sample request.
    let stun: [UInt8] = [
        0x00, 0x01, 0x00, 0x58, 0x21, 0x12, 0xa4, 0x42, 0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87,
        0xdf, 0xae, 0x80, 0x22, 0x00, 0x10, 0x53, 0x54, 0x55, 0x4e, 0x20, 0x74, 0x65, 0x73, 0x74, 0x20, 0x63, 0x6c,
        0x69, 0x65, 0x6e, 0x74, 0x00, 0x24, 0x00, 0x04, 0x6e, 0x00, 0x01, 0xff, 0x80, 0x29, 0x00, 0x08, 0x93, 0x2f,
        0xf9, 0xb1, 0x51, 0x26, 0x3b, 0x36, 0x00, 0x06, 0x00, 0x09, 0x65, 0x76, 0x74, 0x6a, 0x3a, 0x68, 0x36, 0x76,
        0x59, 0x20, 0x20, 0x20, 0x00, 0x08, 0x00, 0x14, 0x9a, 0xea, 0xa7, 0x0c, 0xbf, 0xd8, 0xcb, 0x56, 0x78, 0x1e,
        0xf2, 0xb5, 0xb2, 0xd3, 0xf2, 0x49, 0xc1, 0xb5, 0x71, 0xa2, 0x80, 0x28, 0x00, 0x04, 0xe5, 0x7a, 0x3b, 0xcf,
    ]
    Benchmark("STUN parse (RFC 5769 request)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try? STUNMessage(parsing: stun)) }
    }

    let rtp: [UInt8] = [0x90, 0x6f, 0x12, 0x34, 0, 0, 0x03, 0xc0, 0xca, 0xfe, 0xba, 0xbe, 0xbe, 0xde, 0, 1, 0x10, 0x85,
                        0, 0] + [UInt8](repeating: 0x55, count: 80)
    Benchmark("RTP parse + extensions") { benchmark in
        for _ in benchmark.scaledIterations {
            if let packet = try? RTPPacket(parsing: rtp) { for element in packet.headerExtensions { blackHole(element) } }
        }
    }

    var rtcp: [UInt8] = []
    try? ReceiverReport(ssrc: SSRC(1), reportBlocks: RTCPItemList([ReportBlock(ssrc: SSRC(2), fractionLost: 3)]))
        .serialize(into: &rtcp)
    try? SourceDescription(source: SSRC(1), cname: "chorus")?.serialize(into: &rtcp)
    Benchmark("RTCP compound parse (RR + SDES)") { benchmark in
        for _ in benchmark.scaledIterations {
            if let compound = try? RTCPCompoundPacket(parsing: rtcp) { for packet in compound { blackHole(packet) } }
        }
    }

    srtpBenchmarks()

    for participants in [10, 100, 500] {
        Benchmark("Mixer tick, \(participants) participants, 3 talkers, Opus encodes",
                  configuration: .init(metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(3))) { benchmark in
            var mixer = RoomAudioMixer<Int>(configuration: AudioMixerConfiguration(mixedSpeakers: 3))
            for id in 0..<participants { _ = mixer.addParticipant(id, ssrc: SSRC(UInt32(id + 1))) }
            let tones = (0..<3).map { talker in
                (0..<960).map { Int16(8000 * sin(Double($0) * Double(talker + 2) * 2 * .pi * 110 / 48000)) }
            }
            let encoders = (0..<4).compactMap { _ in try? OpusEncoder(bitrate: 32_000, complexity: 5) }
            var payload = [UInt8](repeating: 0, count: 4000)
            var now = MediaTime.seconds(1)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                for id in 0..<participants {
                    let frame: AudioMixerInput.Frame? = id < 3 ? .int16(tones[id]) : nil
                    _ = mixer.setInput(AudioMixerInput(frame: frame), for: id)
                }
                let tick = mixer.tick(now: now)
                for (index, mix) in tick.mixes.enumerated() where index < encoders.count && !mix.isSilent {
                    let length = mix.samples.withUnsafeBufferPointer { pcm in
                        payload.withUnsafeMutableBufferPointer { (try? encoders[index].encode(pcm, into: $0)) ?? 0 }
                    }
                    blackHole(length)
                }
                now = now.adding(milliseconds: 20)
            }
        }
    }
    roomTickBenchmarks()
    forwardBenchmarks()
    simulcastBenchmarks()
    roomForwardBenchmarks()
}

/// SRTP protect + unprotect per packet, for the transform production uses (OpenSSL EVP, with
/// AES-NI) and libsrtp2 beside it, over 1, 400 and 1,000 sessions taken in turn: with many,
/// each packet meets a session (its keys, cipher contexts, replay window) that is no longer in
/// the cache, as on a busy server. 100-byte packets (audio) on one session, 1,200-byte
/// (video) on each count.
func srtpBenchmarks() {
    let cases: [(size: Int, sessions: Int)] = [(100, 1), (1_200, 1), (1_200, 400), (1_200, 1_000)]
    for profile in SRTPProtectionProfile.allCases {
        for (size, sessions) in cases {
            let key = [UInt8](repeating: 7, count: profile.keyLength + profile.saltLength)
            let keys = SRTPKeyingMaterial(profile: profile, local: key, remote: key)
            for backend in ["OpenSSL", "libsrtp2"] {
                // Sessions live across samples: libsrtp's first packet clones its stream template.
                let pairs: [(any SRTPTransform, any SRTPTransform)] = (0..<sessions).compactMap { _ in
                    backend == "OpenSSL"
                        ? (try? OpenSSLSRTPTransform(keys)).flatMap { s in (try? OpenSSLSRTPTransform(keys)).map { (s, $0) } }
                        : (try? LibSRTPTransform(keys)).flatMap { s in (try? LibSRTPTransform(keys)).map { (s, $0) } }
                }
                guard pairs.count == sessions else { continue }
                let counter = SequenceBox()
                let name = "SRTP protect+unprotect \(size) B \(profile.openSSLName), \(backend), \(sessions) session(s)"
                Benchmark(name, configuration: .init(scalingFactor: .kilo)) { benchmark in
                    var sequence = counter.value
                    defer { counter.value = sequence }
                    var turn = 0
                    for _ in benchmark.scaledIterations {
                        sequence &+= 1
                        turn = turn + 1 == sessions ? 0 : turn + 1
                        let (sender, receiver) = pairs[turn]
                        var packet: [UInt8] = [0x80, 0x60, UInt8(sequence >> 8), UInt8(sequence & 0xff), 0, 0, 0, 1, 0, 0, 0, 9]
                            + [UInt8](repeating: 1, count: size - 12)
                        try? sender.protectRTP(&packet)
                        try? receiver.unprotectRTP(&packet)
                        blackHole(packet)
                    }
                }
            }
        }
    }
}

/// Simulcast in, per publisher packet: `SimulcastStreams` finds the packet's layer (from its RID
/// extension, or from what it learned when the packet has none) and counts its bytes, then one
/// layer's bitrate is read. The goal is no allocation per packet.
func simulcastBenchmarks() {
    Benchmark("Simulcast classify + layer bitrate, 3 layers",
              configuration: .init(metrics: [.wallClock, .mallocCountTotal], scalingFactor: .kilo)) { benchmark in
        // One packet per layer with its RID (ID 10, two-byte form) and one without: 12-byte
        // header, the extension block, then 1,100 bytes of payload.
        func packet(ssrc: UInt8, rid: String?) -> [UInt8] {
            var block: [UInt8] = rid.map { [10, UInt8($0.utf8.count)] + Array($0.utf8) } ?? [3, 2, 0, 1]
            while block.count % 4 != 0 { block.append(0) }
            return [0x90, 0x60, 0, 1, 0, 0, 0, 1, 0, 0, 0, ssrc, 0x10, 0x00, 0, UInt8(block.count / 4)] + block
                + [UInt8](repeating: 0x42, count: 1_100)
        }
        let rids = ["q", "h", "f"]
        let packets = rids.indices.map { packet(ssrc: UInt8(1 + $0), rid: rids[$0]) }
            + rids.indices.map { packet(ssrc: UInt8(1 + $0), rid: nil) }
        let parsed = packets.compactMap { try? RTPPacket(parsing: $0) }
        var streams = SimulcastStreams(rids: rids, rtpStreamIDExtension: 10, repairedRTPStreamIDExtension: 11)
        var now = MediaTime.seconds(1)
        benchmark.startMeasurement()
        for iteration in benchmark.scaledIterations {
            // Three packets with their RID (as Firefox always and Chromium at first sends them),
            // then three without (Chromium once its SSRCs are acknowledged), in turn.
            let packet = parsed[iteration % 6]
            now = now.adding(nanoseconds: 1_000_000)
            blackHole(streams.received(ssrc: packet.header.ssrc, extensions: packet.headerExtensions,
                                       bytes: packet.bytes.count, now: now))
            blackHole(streams.bitrate(layer: iteration % 3, now: now))
        }
    }
}

/// The video forward path for one publisher packet (1,100 bytes of VP8) and 10 subscribers:
/// SRTP unprotect once, parse the header and the VP8 descriptor, then per subscriber the slot
/// rewrite (fresh header, CSRC, picture ID/TL0PICIDX/KEYIDX) and its own SRTP protect.
func forwardBenchmarks() {
    for profile in SRTPProtectionProfile.allCases {
        let key = [UInt8](repeating: 9, count: profile.keyLength + profile.saltLength)
        let keys = SRTPKeyingMaterial(profile: profile, local: key, remote: key)
        guard let publisherSide = try? LibSRTPTransform(keys), let server = try? LibSRTPTransform(keys) else { continue }
        let subscribers = (0..<10).compactMap { _ in try? LibSRTPTransform(keys) }
        let counter = SequenceBox()
        Benchmark("Video forward, 1 packet to 10 subscribers \(profile.openSSLName)",
                  configuration: .init(metrics: [.wallClock, .mallocCountTotal], scalingFactor: .kilo)) { benchmark in
            var slots = (0..<10).map { index in
                SlotStreamRewriter(ssrc: SSRC(UInt32(100 + index)), payloadType: PayloadType(96)!,
                                   initialSequenceNumber: 1, initialTimestamp: 1)
            }
            // VP8 descriptor: X, S, PID 0; I with a 15-bit picture ID; L; T/K; then a keyframe header.
            let vp8: [UInt8] = [0x90, 0xE0, 0x80, 0x01, 0x05, 0x20, 0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A]
            let body = [UInt8](repeating: 0x42, count: 1_100 - 12 - vp8.count)
            var out: [UInt8] = []
            var sequence = counter.value
            defer { counter.value = sequence }
            // Switch at the sample's first sequence number (the counter carries on across samples).
            let start = sequence &+ 1
            for (index, _) in slots.enumerated() {
                let first = [0x80, 0x60, UInt8(start >> 8), UInt8(start & 0xFF), 0, 0, 0, 1, 0, 0, 0, 5] + vp8 + body
                if let header = try? RTPHeader(parsing: first) {
                    slots[index].switchSource(to: SSRC(5), at: header, vp8: try? VP8PayloadDescriptor(parsing: first[12...]),
                                              now: .seconds(1))
                }
            }
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                sequence &+= 1
                var packet: [UInt8] = [0x80, 0x60, UInt8(sequence >> 8), UInt8(sequence & 0xFF), 0, 0, 0, 1, 0, 0, 0, 5]
                    + vp8 + body
                // The publisher's own protect is inside the measurement too (one more protect).
                try? publisherSide.protectRTP(&packet)
                try? server.unprotectRTP(&packet)
                guard let header = try? RTPHeader(parsing: packet) else { continue }
                let descriptor = try? VP8PayloadDescriptor(parsing: packet[header.payloadRange])
                for index in slots.indices {
                    _ = slots[index].rewrite(packet, header: header, vp8: descriptor, now: .seconds(2), into: &out)
                    var protected = out
                    try? subscribers[index].protectRTP(&protected)
                    blackHole(protected)
                }
            }
        }
    }
}

/// The room's whole audio tick for 500 participants: jitter buffer + Opus decode per
/// participant, the mixer, and the distinct encodes. Three talk; the rest send Opus-coded
/// silence. "every decode" is the aiortc case (no client level, everyone decoded); "quiet
/// skipped" is the browser case (RFC 6464 levels: only talkers are decoded).
func roomTickBenchmarks() {
    for skipQuiet in [false, true] {
        Benchmark("Room audio tick, 500 participants, 3 talkers, \(skipQuiet ? "quiet skipped" : "every decode")",
                  configuration: .init(metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(3))) { benchmark in
            let participants = 500
            guard let talkerEncoder = try? OpusEncoder(bitrate: 32_000), let quietEncoder = try? OpusEncoder(bitrate: 32_000)
            else { return }
            // 50 frames of each stream, replayed in a loop.
            let tone = (0..<50).map { frame in
                (0..<960).map { Int16(8000 * sin(Double(frame * 960 + $0) * 2 * .pi * 220 / 48000)) }
            }
            let talkerPackets = tone.map { (try? talkerEncoder.encode($0)) ?? [] }
            let quietPackets = (0..<50).map { _ in (try? quietEncoder.encode([Int16](repeating: 0, count: 960))) ?? [] }
            var chains = (0..<participants).compactMap { _ in try? OpusDecoder() }.map { JitterBufferedDecoder(decoder: $0) }
            var mixer = RoomAudioMixer<Int>(configuration: AudioMixerConfiguration(mixedSpeakers: 3))
            for id in 0..<participants { _ = mixer.addParticipant(id, ssrc: SSRC(UInt32(id + 1))) }
            let encoders = (0..<4).compactMap { _ in try? OpusEncoder(bitrate: 32_000, complexity: 5) }
            var payload = [UInt8](repeating: 0, count: 4000)
            var pcm = [[Int16]](repeating: [Int16](repeating: 0, count: 960), count: participants)
            var tickIndex = 0
            func tick() {
                let now = MediaTime(nanoseconds: 1_000_000_000 + UInt64(tickIndex) * 20_000_000)
                for id in chains.indices {
                    let packet = id < 3 ? talkerPackets[tickIndex % 50] : quietPackets[tickIndex % 50]
                    chains[id].insert(sequenceNumber: UInt16(truncatingIfNeeded: tickIndex),
                                      timestamp: UInt32(truncatingIfNeeded: tickIndex * 960), payload: packet,
                                      arrival: now.adding(milliseconds: 1))
                    let decode = !skipQuiet || id < 3
                    let kind = pcm[id].withUnsafeMutableBufferPointer {
                        chains[id].nextFrame(now: now.adding(milliseconds: 30), into: $0, decode: decode)
                    }
                    let level: SSRCAudioLevel? = skipQuiet ? SSRCAudioLevel(level: id < 3 ? 20 : 127, voiceActivity: nil) : nil
                    let frame: AudioMixerInput.Frame? = kind == .audio ? .int16(pcm[id]) : nil
                    _ = mixer.setInput(AudioMixerInput(frame: frame, audioLevel: level), for: id)
                }
                let result = mixer.tick(now: now)
                for (index, mix) in result.mixes.enumerated() where index < encoders.count && !mix.isSilent {
                    let length = mix.samples.withUnsafeBufferPointer { samples in
                        payload.withUnsafeMutableBufferPointer { (try? encoders[index].encode(samples, into: $0)) ?? 0 }
                    }
                    blackHole(length)
                }
                tickIndex += 1
            }
            for _ in 0..<10 { tick() }  // past the jitter buffer's start
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { tick() }
        }
    }
}

import Foundation

/// Keeps the RTP sequence number increasing across samples (replay protection is on).
/// `@unchecked Sendable`: the benchmark closures that capture it must be `Sendable`, but the
/// harness runs one benchmark's samples one after another on one thread, so `value` is never
/// touched from two threads at once.
final class SequenceBox: @unchecked Sendable {
    var value: UInt16 = 0
}
