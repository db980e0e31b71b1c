import AudioMixer
import Testing

/// Reads back what an `OggOpusWriter` wrote, for tests: the packets of an Ogg stream (lacing
/// joined across values of 255), the OpusTags comments, the last granule position and whether
/// the stream ended, and the audio decoded with libopus.
struct OggReader {
    private(set) var packets: [[UInt8]] = []
    private(set) var lastGranule: UInt64 = 0
    private(set) var ended = false

    init(_ bytes: [UInt8]) {
        var offset = 0
        var partial: [UInt8] = []
        while offset + 27 <= bytes.count, Array(bytes[offset..<offset + 4]) == Array("OggS".utf8) {
            let count = Int(bytes[offset + 26])
            guard offset + 27 + count <= bytes.count else { break }
            let lacing = bytes[offset + 27..<offset + 27 + count]
            var body = offset + 27 + count
            for value in lacing {
                guard body + Int(value) <= bytes.count else { break }
                partial += bytes[body..<body + Int(value)]
                body += Int(value)
                if value < 255 {
                    packets.append(partial)
                    partial = []
                }
            }
            let granule = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + 6 + $1]) << (8 * $1) }
            if granule != .max { lastGranule = granule }  // -1: no packet finishes on the page
            ended = bytes[offset + 5] & 0x04 != 0
            offset = body
        }
    }

    /// The OpusTags user comments ("NAME=value").
    var comments: [String] {
        guard packets.count > 1 else { return [] }
        let tags = packets[1]
        func length(at index: Int) -> Int {
            index + 4 <= tags.count ? (0..<4).reduce(0) { $0 | Int(tags[index + $1]) << (8 * $1) } : 0
        }
        var index = 8 + 4 + length(at: 8)
        let count = length(at: index)
        index += 4
        var result: [String] = []
        for _ in 0..<count where index + 4 <= tags.count {
            let size = length(at: index)
            index += 4
            guard index + size <= tags.count else { break }
            result.append(String(decoding: tags[index..<index + size], as: UTF8.self))
            index += size
        }
        return result
    }

    /// The audio packets decoded in order (pre-skip removed).
    func decoded() throws -> [Int16] {
        let decoder = try OpusDecoder()
        var pcm = [Int16](repeating: 0, count: 5_760)
        var audio: [Int16] = []
        for packet in packets.dropFirst(2) {
            let count = packet.withUnsafeBufferPointer { input in
                pcm.withUnsafeMutableBufferPointer { (try? decoder.decode(input, into: $0)) ?? 0 }
            }
            #expect(count > 0, "a recorded packet does not decode")
            audio += pcm[0..<count]
        }
        return Array(audio.dropFirst(Int(OggOpusWriter.preSkip)))
    }
}
