@testable import AudioMixer
import Testing

/// Ogg Opus pages (RFC 7845 over RFC 3533) from ready Opus packets: the CRC's check value, the
/// header pages, lacing, granule positions and the silence that fills ticks without a packet.
/// (The files' decoding by opus-tools is checked in Tests/Interop/test_recording.py.)
@Suite("Ogg Opus writer")
struct OggOpusWriterTests {
    @Test func crcIsOggsPolynomialUnreflectedWithZeroInit() {
        #expect(OggCRC.checksum(Array("123456789".utf8)) == 0x89A1_897F)
    }

    /// The pages of `bytes`: (flags, granule, sequence, lacing, body), each page's CRC checked.
    func pages(_ bytes: [UInt8]) -> [(flags: UInt8, granule: UInt64, sequence: UInt32, lacing: [UInt8], body: [UInt8])] {
        var result: [(UInt8, UInt64, UInt32, [UInt8], [UInt8])] = []
        var offset = 0
        while offset + 27 <= bytes.count {
            #expect(Array(bytes[offset..<offset + 4]) == Array("OggS".utf8))
            let count = Int(bytes[offset + 26])
            let lacing = Array(bytes[offset + 27..<offset + 27 + count])
            let length = lacing.reduce(0) { $0 + Int($1) }
            let end = offset + 27 + count + length
            var page = Array(bytes[offset..<end])
            let stored = (0..<4).reduce(UInt32(0)) { $0 | UInt32(page[22 + $1]) << (8 * $1) }
            for index in 22..<26 { page[index] = 0 }
            #expect(OggCRC.checksum(page) == stored)
            let granule = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + 6 + $1]) << (8 * $1) }
            let sequence = (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + 18 + $1]) << (8 * $1) }
            result.append((bytes[offset + 5], granule, sequence, lacing, Array(bytes[offset + 27 + count..<end])))
            offset = end
        }
        #expect(offset == bytes.count)
        return result
    }

    @Test func headersThenOnePageASecondWithGranulesThenEndOfStream() {
        var writer = OggOpusWriter(serial: 7, silence: OpusSilence(twentyMilliseconds: [0xF8, 0xFF, 0xFE]))
        var bytes = writer.begin()
        for tick in 0..<120 { bytes += writer.append(tick % 10 == 0 ? nil : [UInt8](repeating: UInt8(tick), count: 300)) }
        bytes += writer.finish()
        let all = pages(bytes)
        #expect(all.count == 5)  // OpusHead, OpusTags, 50 packets, 50 packets, 20 packets
        #expect(all[0].flags == 0x02 && Array(all[0].body.prefix(8)) == Array("OpusHead".utf8) && all[0].body.count == 19)
        #expect(Array(all[1].body.prefix(8)) == Array("OpusTags".utf8))
        #expect(all.map(\.sequence) == [0, 1, 2, 3, 4])
        #expect(all.map(\.granule) == [0, 0, 48_000, 96_000, 115_200])
        #expect(all[4].flags == 0x04)
        // A 300-byte packet laces as 255 + 45; a silence-filled tick is the 3-byte packet.
        #expect(Array(all[2].lacing.prefix(3)) == [3, 255, 45])
        #expect(abs(writer.duration - (115_200.0 - 312) / 48_000) < 1e-9)
    }

    /// Stopped right after a page: the end-of-stream page has no packet, so its granule is -1
    /// (RFC 3533 §6); the last granule of the stream stays that of the page before it.
    @Test func anEmptyLastPageCarriesGranuleMinusOne() {
        var writer = OggOpusWriter(serial: 3, silence: OpusSilence(twentyMilliseconds: [0xF8]))
        var bytes = writer.begin()
        for _ in 0..<100 { bytes += writer.append([1, 2, 3]) }
        bytes += writer.finish()
        let audio = Array(pages(bytes).dropFirst(2))
        #expect(audio.map(\.granule) == [48_000, 96_000, UInt64.max])
        #expect(audio.last?.flags == 0x04 && audio.last?.lacing.isEmpty == true)
        #expect(abs(writer.duration - (96_000.0 - 312) / 48_000) < 1e-9)
    }

    @Test func largePacketsCloseAPageBeforeItsLacingOverflows() {
        var writer = OggOpusWriter(serial: 1, silence: OpusSilence(twentyMilliseconds: [0xF8]))
        var bytes = writer.begin()
        for _ in 0..<50 { bytes += writer.append([UInt8](repeating: 1, count: 1_275)) }  // 6 lacing values each
        bytes += writer.finish()
        let audio = pages(bytes).dropFirst(2)
        #expect(audio.allSatisfy { $0.lacing.count <= 255 })
        #expect(audio.reduce(0) { $0 + $1.body.count } == 50 * 1_275)
        #expect(audio.last?.granule == 50 * 960)
    }

    /// A payload too big for one page's lacing (a peer's relayed packet can be anything) is
    /// recorded as silence instead of trapping on the page's one-byte lacing count.
    @Test func aPacketTooBigForAPageIsRecordedAsSilence() {
        var writer = OggOpusWriter(serial: 1, silence: OpusSilence(twentyMilliseconds: [0xF8, 0xFF, 0xFE]))
        var bytes = writer.begin()
        bytes += writer.append([UInt8](repeating: 7, count: 66_000))  // 259 lacing values
        bytes += writer.finish()
        let audio = pages(bytes).dropFirst(2)
        #expect(audio.count == 1 && audio.first?.body == [0xF8, 0xFF, 0xFE])
        #expect(audio.first?.granule == 960)
    }
}
