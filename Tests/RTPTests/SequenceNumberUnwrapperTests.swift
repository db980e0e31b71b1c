import ChorusCore
import Testing

@Suite("Sequence number and timestamp unwrapping")
struct SequenceNumberUnwrapperTests {
    @Test func firstValueLandsInCycleOne() {
        var unwrapper = SequenceNumberUnwrapper()
        #expect(unwrapper.highest == nil)
        #expect(unwrapper.unwrap(1000) == 65_536 + 1000)
        #expect(unwrapper.highest == 65_536 + 1000)
    }

    @Test func inOrderAcrossTheWrap() {
        var unwrapper = SequenceNumberUnwrapper()
        let wire: [UInt16] = [65_533, 65_534, 65_535, 0, 1, 2]
        let extended = wire.map { unwrapper.unwrap($0) }
        #expect(extended == [131_069, 131_070, 131_071, 131_072, 131_073, 131_074])
    }

    @Test func reorderingAroundTheWrap() {
        var unwrapper = SequenceNumberUnwrapper()
        // 65535 arrives after 0, and 65534 after 1: both stay before the wrap.
        let wire: [UInt16] = [65_533, 0, 65_535, 1, 65_534, 2]
        let extended = wire.map { unwrapper.unwrap($0) }
        #expect(extended == [131_069, 131_072, 131_071, 131_073, 131_070, 131_074])
        #expect(unwrapper.highest == 131_074)
    }

    @Test func packetFromBeforeTheFirstStaysSmaller() {
        var unwrapper = SequenceNumberUnwrapper()
        #expect(unwrapper.unwrap(0) == 65_536)
        #expect(unwrapper.unwrap(65_535) == 65_535)
        #expect(unwrapper.unwrap(65_000) == 65_000)
        #expect(unwrapper.highest == 65_536)
    }

    @Test func halfRangeJumpIsReadAsOld() {
        var unwrapper = SequenceNumberUnwrapper()
        unwrapper.unwrap(0)
        #expect(unwrapper.unwrap(32_767) == 65_536 + 32_767)  // forward, just under half
        #expect(unwrapper.unwrap(0) == 65_536)  // 32767 back
        // From 32767, 65535 is 32768 ahead: exactly half the range counts as older.
        #expect(unwrapper.peek(65_535) == 65_536 + 32_767 - 32_768)
    }

    @Test func peekDoesNotRecord() {
        var unwrapper = SequenceNumberUnwrapper()
        unwrapper.unwrap(10)
        #expect(unwrapper.peek(20) == 65_546 + 10)
        #expect(unwrapper.highest == 65_546)
        unwrapper.reset()
        #expect(unwrapper.highest == nil)
    }

    @Test func randomReorderingMatchesTheTruth() {
        var generator = SplitMix64(seed: 0x5EED)
        var unwrapper = SequenceNumberUnwrapper()
        let start: UInt64 = 65_536 + 65_000
        var truth: [UInt64] = Array(start..<(start + 300_000))
        // Local shuffles of up to 200 positions, as a bad network would do.
        for index in stride(from: 0, to: truth.count - 200, by: 150) {
            truth[index..<(index + 200)].shuffle(using: &generator)
        }
        // The first value is within 65_536 + 0…65_535, i.e. where the unwrapper puts it.
        let mismatches = truth.filter { unwrapper.unwrap(UInt16(truncatingIfNeeded: $0)) != $0 }
        #expect(mismatches.isEmpty)
    }

    @Test func timestampsAcrossTheWrap() {
        var unwrapper = TimestampUnwrapper()
        let wire: [UInt32] = [UInt32.max - 960, UInt32.max - 960 + 960, 959, 0, 1919]
        let extended = wire.map { unwrapper.unwrap($0) }
        let base: UInt64 = 1 << 32
        #expect(extended == [base + UInt64(UInt32.max) - 960, base + UInt64(UInt32.max), base + base + 959,
                             base + base, base + base + 1919])
    }

    @Test func fifteenBitPictureIDs() {
        var unwrapper = WrappingCounterUnwrapper(bitWidth: 15)
        let extended = [0x7FFE, 0x7FFF, 0, 1].map { unwrapper.unwrap(UInt64($0)) }
        #expect(extended == [0x8000 + 0x7FFE, 0x8000 + 0x7FFF, 0x10000, 0x10001])
    }
}
