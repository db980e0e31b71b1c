import ChorusCore
import Testing
import VideoForwarder

/// Proves which publisher packets get NACKed and when: gaps, retries, limits, wrap, restarts.
@Suite("LossDetector: which publisher packets to NACK, and when")
struct LossDetectorTests {
    private func detector(_ sequence: [UInt16], at now: UInt64 = 0) -> LossDetector {
        var detector = LossDetector()
        for seq in sequence { detector.received(seq, now: ms(now)) }
        return detector
    }

    /// A gap is NACKed at the first poll, again every 100 ms (not earlier), three times in
    /// all, then dropped.
    @Test func nackTimingAndAttempts() {
        var loss = detector([10, 11])
        loss.received(14, now: ms(5))
        #expect(loss.due(now: ms(20)) == [12, 13])
        #expect(loss.due(now: ms(20)) == [])
        #expect(loss.due(now: ms(119)) == [])
        #expect(loss.due(now: ms(120)) == [12, 13])
        #expect(loss.due(now: ms(200)) == [])
        #expect(loss.due(now: ms(220)) == [12, 13])
        #expect(loss.due(now: ms(320)) == [])
        #expect(loss.due(now: ms(900)) == [])
    }

    /// With many attempts allowed, a packet is NACKed until `maximumAge` (1 s) after the gap
    /// showed, inclusive.
    @Test func nackStopsAtTheMaximumAge() {
        var loss = detector([1])
        loss.maximumAttempts = 100
        loss.received(3, now: ms(0))
        let polls = stride(from: UInt64(0), through: 1_500, by: 100).map { (at: $0, due: loss.due(now: ms($0))) }
        let nacked = polls.filter { $0.due == [2] }.map(\.at)
        #expect(nacked == Array(stride(from: UInt64(0), through: 1_000, by: 100)))
    }

    /// The retry interval and attempts are settable.
    @Test func customRetryInterval() {
        var loss = detector([1])
        loss.retryInterval = 40_000_000
        loss.maximumAttempts = 2
        loss.received(3, now: ms(0))
        #expect([0, 39, 40, 80, 120].map { loss.due(now: ms($0)) } == [[2], [], [2], [], []])
    }

    /// A packet that arrives after its NACK is removed from the NACK list and counted as
    /// recovered; the others keep being NACKed.
    @Test func recoveredPacketsAreRemovedAndCounted() {
        var loss = detector([100])
        loss.received(104, now: ms(0))
        #expect(loss.due(now: ms(10)) == [101, 102, 103])
        loss.received(102, now: ms(30))
        #expect(loss.recovered == 1)
        loss.received(102, now: ms(31))  // a duplicate retransmission
        #expect(loss.recovered == 1)
        #expect(loss.due(now: ms(110)) == [101, 103])
        loss.received(101, now: ms(120))
        loss.received(103, now: ms(121))
        #expect(loss.recovered == 3)
        #expect(loss.due(now: ms(210)) == [])
    }

    /// Reordering: a packet that arrives late but before the poll is never NACKed.
    @Test func reorderingBeforeThePollIsNotNacked() {
        var loss = detector([10, 12, 11, 13, 15, 14])
        #expect(loss.due(now: ms(10)) == [])
        #expect(loss.due(now: ms(500)) == [])
    }

    /// `recovered` counts packets that arrived after being NACKed (its documented meaning),
    /// not plain reordering that was repaired before any NACK went out.
    @Test func reorderingIsNotCountedAsRecovered() {
        let loss = detector([10, 12, 11, 13, 15, 14])
        #expect(loss.recovered == 0)
    }

    /// The 65535 → 0 wrap is not loss; a gap across it is NACKed with wrapped numbers.
    @Test func wrapAround() {
        var clean = detector([65_533, 65_534, 65_535, 0, 1, 2])
        #expect(clean.due(now: ms(10)) == [])
        var gap = detector([65_533])
        gap.received(1, now: ms(0))
        #expect(gap.due(now: ms(10)) == [65_534, 65_535, 0])
    }

    /// A jump of more than 256 (the capacity) is a restart, not loss, and also forgets the
    /// older gaps; a gap of exactly 256 is tracked in full.
    @Test func bigJumpIsNotLoss() {
        var jump = detector([1_000])
        jump.received(1_003, now: ms(0))  // 1001, 1002 missing
        jump.received(1_003 + 258, now: ms(1))  // 257 missing: too many
        #expect(jump.due(now: ms(10)) == [])
        jump.received(1_003 + 260, now: ms(20))  // after the restart, loss is tracked again
        #expect(jump.due(now: ms(30)) == [1_003 + 259])

        var full = detector([0])
        full.received(257, now: ms(0))
        let due = full.due(now: ms(10))
        #expect(due.count == 256 && due.first == 1 && due.last == 256)
    }

    /// At most 256 missing packets are tracked: the oldest are dropped first.
    @Test func trackedLossIsBounded() {
        var loss = detector([0])
        loss.received(200, now: ms(0))  // 1…199 missing
        loss.received(400, now: ms(0))  // 201…399 missing: 398 in all
        let due = loss.due(now: ms(10))
        #expect(due.count == 256)
        #expect(due.first == 143 && due.last == 399)
        #expect(!due.contains(200) && due.contains(201))
    }

    /// Duplicates and late packets that were never missing change nothing.
    @Test func duplicatesAndOldPacketsAreIgnored() {
        var loss = detector([5, 6, 6, 7, 4, 5, 7])
        #expect(loss.due(now: ms(10)) == [])
        #expect(loss.recovered == 0)
    }
}
