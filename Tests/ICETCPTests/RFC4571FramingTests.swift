import ICETCP
import Testing

/// RFC 4571 framing as TCP delivers it: frames split across reads at every byte boundary,
/// coalesced into one read, empty, too long, and a prefix that never completes.
@Suite("RFC 4571 framing")
struct RFC4571FramingTests {
    static let frames: [[UInt8]] = [
        [0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xA4, 0x42] + Array(repeating: 7, count: 12),  // STUN-like
        [0x80, 0x6F] + (0..<300).map { UInt8(truncatingIfNeeded: $0) },                    // SRTP-like
        [0x16, 0xFE, 0xFD] + Array(repeating: 0xAB, count: 40),                             // DTLS-like
    ]
    static let stream = frames.flatMap { RFC4571Deframer.frame($0)! }

    func deframe(_ reads: [ArraySlice<UInt8>], maximum: Int = 4_096) throws(RFC4571FramingError)
        -> ([[UInt8]], RFC4571Deframer)
    {
        var deframer = RFC4571Deframer(maximumFrameLength: maximum)
        var out: [[UInt8]] = []
        for read in reads { try deframer.feed(read, into: &out) }
        return (out, deframer)
    }

    @Test func framingPrefixesTheLengthBigEndian() {
        #expect(RFC4571Deframer.frame([1, 2, 3]) == [0, 3, 1, 2, 3])
        #expect(RFC4571Deframer.frame(Array(repeating: 0, count: 0x1234))?.prefix(2) == [0x12, 0x34])
        #expect(RFC4571Deframer.frame(Array(repeating: 0, count: 65_535)) != nil)
        #expect(RFC4571Deframer.frame(Array(repeating: 0, count: 65_536)) == nil)
    }

    @Test func coalescedFramesInOneReadComeOutWhole() throws {
        let (out, deframer) = try deframe([Self.stream[...]])
        #expect(out == Self.frames)
        #expect(deframer.isAtFrameBoundary && deframer.bufferedBytes == 0)
    }

    @Test func everySplitPointGivesTheSameFrames() throws {
        for cut in 1..<Self.stream.count {
            let (out, deframer) = try deframe([Self.stream[..<cut], Self.stream[cut...]])
            #expect(out == Self.frames, "split at byte \(cut)")
            #expect(deframer.isAtFrameBoundary)
        }
        let (bytewise, _) = try deframe(Self.stream.indices.map { Self.stream[$0...$0] })
        #expect(bytewise == Self.frames)
    }

    @Test func aPartialFrameWaitsAndIsHeldNoLongerThanOneFrame() throws {
        let first = RFC4571Deframer.frame(Self.frames[1])!
        let (out, deframer) = try deframe([first[..<1], first[1..<100]])
        #expect(out.isEmpty)
        #expect(deframer.bufferedBytes == 100 && !deframer.isAtFrameBoundary)
    }

    @Test func emptyFramesAreSkippedAndCounted() throws {
        let stream = [0, 0] + RFC4571Deframer.frame([9, 9])! + [0, 0, 0, 0]
        let (out, deframer) = try deframe([stream[...]])
        #expect(out == [[9, 9]])
        #expect(deframer.emptyFrames == 3)
    }

    @Test func aFrameLongerThanTheMaximumIsAnError() throws {
        let stream = RFC4571Deframer.frame([1])! + [0x10, 0x01] + Array(repeating: 0, count: 10)
        var deframer = RFC4571Deframer(maximumFrameLength: 4_096)
        var out: [[UInt8]] = []
        #expect(throws: RFC4571FramingError.frameTooLong(4_097)) { try deframer.feed(stream, into: &out) }
        #expect(out == [[1]], "frames completed before the bad prefix are kept")
        // Exactly the maximum is fine.
        let atMaximum = RFC4571Deframer.frame(Array(repeating: 5, count: 64))!
        #expect(try deframe([atMaximum[...]], maximum: 64).0 == [Array(repeating: 5, count: 64)])
        #expect(throws: RFC4571FramingError.frameTooLong(65)) {
            try deframe([RFC4571Deframer.frame(Array(repeating: 5, count: 65))![...]], maximum: 64)
        }
    }
}
