import ChorusCore
import Testing

@testable import MediaSocket

/// `ReadSchedule`: when the media reader reads once per room tick and when at once, driven on a
/// simulated clock; and `ArrivalClock`, which turns the kernel's arrival stamps into room time.
@Suite("Media socket: the read schedule")
struct ReadScheduleTests {
    static let ms: UInt64 = 1_000_000
    static let period = ReadSchedule.period
    static let lead = ReadSchedule.lead

    /// A quiet audio-only port reads `lead` before each tick of the 20 ms grid, and never at or
    /// before `now`: inside the lead, the next read is the following tick's.
    @Test func aQuietPortReadsJustBeforeEachTick() {
        let schedule = ReadSchedule()
        let base = 1_000 * Self.period
        #expect(schedule.isTickAligned(at: base))
        #expect(schedule.nextRead(after: base) == base + Self.period - Self.lead)
        #expect(schedule.nextRead(after: base + 5 * Self.ms) == base + Self.period - Self.lead)
        #expect(schedule.nextRead(after: base + Self.period - Self.lead) == base + 2 * Self.period - Self.lead)
        #expect(schedule.nextRead(after: base + Self.period - 1) == base + 2 * Self.period - Self.lead)
    }

    /// A datagram that wants prompt handling (video, DTLS) makes reads immediate for
    /// `promptHold`; after it, a quiet port goes back to reading once per tick.
    @Test func aPromptDatagramKeepsReadsImmediateForAWhile() {
        var schedule = ReadSchedule()
        let start = 1_000 * Self.period
        schedule.noteRead(count: 1, prompt: true, full: false, at: start)
        #expect(schedule.nextRead(after: start) == nil)
        #expect(schedule.nextRead(after: start + ReadSchedule.promptHold - 1) == nil)
        schedule.noteRead(count: 1, prompt: false, full: false, at: start + ReadSchedule.promptHold - 1)
        #expect(schedule.nextRead(after: start + ReadSchedule.promptHold) != nil)
    }

    /// A read that filled a whole recvmmsg batch means a busy port: immediate reads.
    @Test func aFullBatchMakesReadsImmediate() {
        var schedule = ReadSchedule()
        let start = 1_000 * Self.period
        schedule.noteRead(count: 64, prompt: false, full: true, at: start)
        #expect(schedule.nextRead(after: start + 10 * Self.ms) == nil)
    }

    /// `busyPerSecond` datagrams within a second, in small reads, also make the port busy;
    /// fewer do not.
    @Test func aBusyRateMakesReadsImmediate() {
        var quiet = ReadSchedule()
        var busy = ReadSchedule()
        let start = 1_000 * Self.period
        let reads = 50
        for index in 0..<reads {
            let now = start + UInt64(index) * Self.period
            quiet.noteRead(count: ReadSchedule.busyPerSecond / reads - 1, prompt: false, full: false, at: now)
            busy.noteRead(count: ReadSchedule.busyPerSecond / reads + 1, prompt: false, full: false, at: now)
        }
        let end = start + UInt64(reads) * Self.period
        #expect(quiet.nextRead(after: end) != nil)
        #expect(busy.nextRead(after: end) == nil)
    }

    /// Arrival stamps become room time at their age behind `now`; a missing stamp, one from
    /// the future, or one more than a second old (a stepped wall clock) counts as now.
    @Test func arrivalStampsBecomeRoomTime() {
        let clock = ArrivalClock(now: MediaTime(nanoseconds: 50 * Self.ms * 1_000), realtime: 1_700_000_000_000_000_000)
        #expect(clock.arrival(clock.realtime - 7 * Self.ms).nanoseconds == clock.now.nanoseconds - 7 * Self.ms)
        #expect(clock.arrival(clock.realtime) == clock.now)
        #expect(clock.arrival(0) == clock.now)
        #expect(clock.arrival(clock.realtime + Self.ms) == clock.now)
        #expect(clock.arrival(clock.realtime - 2_000 * Self.ms) == clock.now)
    }
}
