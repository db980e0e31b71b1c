import ChorusCore
import Rooms
import Testing

/// The shell's scheduling policy on given facts: who fires a room's ticks, when the reader may
/// run a room's datagrams itself, and what a tick source's firing does. No thread, no clock.
@Suite("RoomScheduling: the shell's policy as a value")
struct RoomSchedulingTests {
    @Test func smallRoomsTickFromTheSourceBigOnesOnATimer() {
        #expect(RoomScheduling.tickDriver(needsTicks: true, hasTickSource: true, members: 3) == .tickSource)
        #expect(RoomScheduling.tickDriver(needsTicks: true, hasTickSource: true, members: 99) == .tickSource)
        #expect(RoomScheduling.tickDriver(needsTicks: true, hasTickSource: true, members: 100) == .timer)
        #expect(RoomScheduling.tickDriver(needsTicks: true, hasTickSource: false, members: 3) == .timer)
        #expect(RoomScheduling.tickDriver(needsTicks: false, hasTickSource: true, members: 3) == .none)
    }

    /// A timer-driven room stops taking datagrams inline 2 ms before its next grid tick (its
    /// firing then waits on the queue, unseen); a source-driven one never stops; a big one never
    /// starts.
    @Test func theInlineWindowEndsAGuardBeforeATimersTick() {
        let next = MediaTime.milliseconds(1_020)
        #expect(RoomScheduling.inlineUntil(members: 5, driver: .timer, nextTick: next) == 1_018_000_000)
        #expect(RoomScheduling.inlineUntil(members: 5, driver: .tickSource, nextTick: next) == .max)
        #expect(RoomScheduling.inlineUntil(members: 150, driver: .timer, nextTick: next) == 0)
        #expect(RoomScheduling.inlineUntil(members: 5, driver: .timer, nextTick: nil) == 0)
        let until = RoomScheduling.inlineUntil(members: 5, driver: .timer, nextTick: next)
        func handling(at ms: UInt64, light: Bool = true, idle: Bool = true, dtls: Bool = false)
            -> RoomScheduling.DatagramHandling {
            RoomScheduling.datagramHandling(readerIsLight: light, now: .milliseconds(ms), inlineUntil: until, queueIdle: idle,
                                            carriesDTLS: dtls)
        }
        #expect(handling(at: 1_005) == .inline)
        #expect(handling(at: 1_018) == .hop, "inside the guard before the tick")
        #expect(handling(at: 1_005, light: false) == .hop, "a busy reader never waits")
        #expect(handling(at: 1_005, idle: false) == .hop, "a queue with work keeps the order")
        #expect(handling(at: 1_005, dtls: true) == .hop, "a handshake's signing stays off the reader")
    }

    @Test func aFiringRunsInlineOrIsQueuedOnce() {
        #expect(RoomScheduling.firing(mayRunInline: true, queueIdle: true, tickWaiting: false) == .inline)
        #expect(RoomScheduling.firing(mayRunInline: true, queueIdle: false, tickWaiting: false) == .enqueue)
        #expect(RoomScheduling.firing(mayRunInline: false, queueIdle: true, tickWaiting: false) == .enqueue)
        #expect(RoomScheduling.firing(mayRunInline: false, queueIdle: true, tickWaiting: true) == .alreadyWaiting)
    }
}
