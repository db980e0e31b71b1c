/// Opus packets of digital silence, one per frame duration the Ogg writers need to fill a gap:
/// 20 ms for a mix tick without a packet, and 10, 5 and 2.5 ms for the rest of a participant's
/// gap when its packets are not 20 ms long. Encoded once per recording by a fresh encoder: a
/// lone silent Opus packet decodes on its own to zeros, whatever came before it.
public struct OpusSilence: Sendable {
    /// (duration in 48 kHz samples, packet), longest first.
    public let packets: [(samples: Int, packet: [UInt8])]
    /// The 20 ms packet (a one-byte CELT silence frame if none was given): every silent mix tick.
    public let twentyMilliseconds: [UInt8]

    public init(packets: [(samples: Int, packet: [UInt8])]) {
        self.packets = packets.filter { $0.samples > 0 && !$0.packet.isEmpty }.sorted { $0.samples > $1.samples }
        twentyMilliseconds = self.packets.first { $0.samples == AudioCodecFormat.frameSamples }?.packet ?? [0xF8]
    }

    /// Only a 20 ms packet (tests, and the mix, whose ticks are all 20 ms).
    public init(twentyMilliseconds packet: [UInt8]) {
        self.init(packets: [(AudioCodecFormat.frameSamples, packet)])
    }

    /// Calls `body` with packets whose durations add up to `samples`, longest first, without
    /// gathering them (a silent participant's track fills a gap every tick); a remainder
    /// shorter than the shortest packet (never: Opus durations are multiples of 2.5 ms) is left out.
    public func forEachPacket(covering samples: Int, _ body: (_ samples: Int, _ packet: [UInt8]) -> Void) {
        var left = samples
        for entry in packets {
            while left >= entry.samples {
                body(entry.samples, entry.packet)
                left -= entry.samples
            }
        }
    }

    /// Silence at 20, 10, 5 and 2.5 ms from fresh encoders (the third packet of each: the first
    /// ones carry the encoder's start-up); nil when libopus cannot encode.
    public static func encoded() -> OpusSilence? {
        var packets: [(samples: Int, packet: [UInt8])] = []
        for samples in [960, 480, 240, 120] {
            guard let encoder = try? OpusEncoder() else { return nil }
            let zeros = [Int16](repeating: 0, count: samples)
            var packet = [UInt8](repeating: 0, count: AudioCodecFormat.maxPayloadBytes)
            var length = 0
            for _ in 0..<3 {
                length = zeros.withUnsafeBufferPointer { pcm in
                    packet.withUnsafeMutableBufferPointer { out in (try? encoder.encode(pcm, into: out)) ?? 0 }
                }
            }
            guard length > 0 else { return nil }
            packets.append((samples, Array(packet[0..<length])))
        }
        return OpusSilence(packets: packets)
    }
}
