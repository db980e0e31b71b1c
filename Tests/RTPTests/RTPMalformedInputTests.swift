import ChorusCore
import ChorusTestSupport
import RTP
import Testing

/// Peer input must never trap: every parser either throws or returns a value whose ranges lie
/// inside the input, for truncations, lying length fields, bit flips and random bytes.
@Suite("RTP parsers on malformed input")
struct RTPMalformedInputTests {
    static let map = RTPHeaderExtensionMap(
        mid: 4, audioLevel: 1, csrcAudioLevels: 5, transportSequenceNumber: 3, absoluteSendTime: 2)

    /// Parses `bytes` every way a receiver would and touches every part it reports.
    @discardableResult
    static func exercise(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard let packet = try? RTPPacket(parsing: bytes) else { return false }
        let header = packet.header
        #expect(header.packetLength == bytes.count)
        #expect(header.payloadRange.lowerBound >= header.extensionRange.upperBound)
        _ = Array(packet.csrcs)
        _ = Array(packet.payload)
        var total = 0
        for element in packet.headerExtensions { total += element.data.count }
        #expect(total <= header.extensionRange.count)
        _ = map.decode(packet.headerExtensions)
        if let descriptor = try? VP8PayloadDescriptor(parsing: packet.payload) {
            #expect(descriptor.length < packet.payload.count)
            _ = descriptor.isKeyFrame(payload: packet.payload)
            _ = descriptor.payloadHeader(payload: packet.payload)
            var copy = Array(bytes)
            descriptor.rewritePictureID(0x1234, in: &copy, payloadOffset: header.payloadRange.lowerBound)
            descriptor.rewriteTL0PictureIndex(1, in: &copy, payloadOffset: header.payloadRange.lowerBound)
            descriptor.rewriteKeyIndex(1, in: &copy, payloadOffset: header.payloadRange.lowerBound)
        }
        var copy = Array(bytes)
        RTPHeaderRewriter.setTransportSequenceNumber(1, extensionID: 3, in: &copy, header: header)
        RTPHeaderRewriter.setAbsoluteSendTime(AbsoluteSendTime(rawValue: 1), extensionID: 2, in: &copy, header: header)
        return true
    }

    @Test func everyTruncationOfEveryVector() {
        for vector in RTPVectors.all {
            let headerLength = (try? RTPHeader(parsing: vector))?.headerLength ?? 0
            for prefix in truncations(of: vector) {
                let parsed = Self.exercise(prefix[...])
                // Cutting into the header can never leave a valid packet.
                if prefix.count < headerLength { #expect(!parsed, "\(prefix)") }
            }
        }
    }

    @Test func truncatedPaddedPacketsAreRefused() {
        // With P set, a cut moves the padding count byte into the payload or header.
        let vector = RTPVectors.full
        for prefix in truncations(of: vector) where prefix.count >= 36 {
            #expect(throws: RTPParseError.self) { try RTPHeader(parsing: prefix) }
        }
    }

    @Test func lyingLengthFields() {
        for csrcCount: UInt8 in 3...15 {  // more CSRCs than bytes
            var bytes = RTPVectors.full
            bytes[0] = bytes[0] & 0xF0 | csrcCount
            #expect(!Self.exercise(bytes[...]) || csrcCount < 3)
        }
        for words: UInt8 in 4...255 {  // extension longer than the packet allows
            var bytes = RTPVectors.full
            bytes[23] = words
            #expect(!Self.exercise(bytes[...]), "extension words \(words)")
        }
        for paddingCount: UInt8 in [0, 7, 8, 200, 255] {  // padding reaching into the header
            var bytes = RTPVectors.full
            bytes[bytes.count - 1] = paddingCount
            #expect(!Self.exercise(bytes[...]), "padding \(paddingCount)")
        }
        for length: UInt8 in 4...255 {  // two-byte element lengths past the block
            var bytes = RTPVectors.twoByte
            bytes[20] = length
            #expect(!Self.exercise(bytes[...]), "element length \(length)")
        }
    }

    @Test func bitFlipsOfValidPackets() {
        var generator = SplitMix64(seed: 0xB17F_11B5)
        for vector in RTPVectors.all + [RTPVectors.minimal.prefix(12) + VP8Vectors.longPictureIDAllFields] {
            for _ in 0..<2_000 {
                var bytes = vector
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let index = Int.random(in: 0..<bytes.count, using: &generator)
                    bytes[index] ^= UInt8(1) << UInt8.random(in: 0...7, using: &generator)
                }
                Self.exercise(bytes[...])
            }
        }
    }

    @Test func randomBytes() {
        var generator = SplitMix64(seed: 0x00C0_FFEE)
        var parsed = 0
        for _ in 0..<20_000 {
            var bytes = generator.bytes(count: Int.random(in: 0...80, using: &generator))
            if !bytes.isEmpty, Bool.random(using: &generator) {
                bytes[0] = 0x80 | bytes[0] & 0x3F  // version 2, so parsing goes deeper
            }
            if Self.exercise(bytes[...]) { parsed += 1 }
            _ = try? VP8PayloadDescriptor(parsing: bytes)
            _ = try? VP8PayloadHeader(parsing: bytes[...])
        }
        #expect(parsed > 0)  // the corpus reaches past the version check
    }

    @Test func randomExtensionBlocks() {
        var generator = SplitMix64(seed: 8285)
        for profile: UInt16 in [0xBEDE, 0x1000, 0x100F] {
            for _ in 0..<5_000 {
                let words = Int.random(in: 0...6, using: &generator)
                var bytes: [UInt8] = [0x90, 0x60, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3,
                                      UInt8(profile >> 8), UInt8(profile & 0xFF), 0, UInt8(words)]
                bytes += generator.bytes(count: 4 * words + Int.random(in: 0...3, using: &generator))
                Self.exercise(bytes[...])
            }
        }
    }
}
