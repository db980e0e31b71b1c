import ChorusCore
import Testing

@testable import Rooms

/// The audio tick grid: one tick per firing whatever the timer's lateness does, catch-up when
/// late, a restart when hopelessly behind.
@Suite("Room tick grid")
struct TickGridTests {
    static func ms(_ value: Double) -> MediaTime { MediaTime(nanoseconds: UInt64(value * 1e6)) }

    func run(_ grid: inout TickGrid, at milliseconds: Double) -> [Double] {
        var ticks: [Double] = []
        grid.run(at: Self.ms(milliseconds)) { ticks.append(Double($0.nanoseconds) / 1e6) }
        return ticks
    }

    /// A first firing 0.5 ms late runs its grid tick; later firings 0.1 to 0.9 ms late each
    /// still run exactly their own tick (before the half-period rule, a firing less late than
    /// the first ran none and the next ran two).
    @Test func lessLateFiringsRunTheirTick() {
        var grid = TickGrid(periodMilliseconds: 20)
        #expect(run(&grid, at: 1_000.5) == [1_000])
        for k in 1...50 {
            let lateness = k % 2 == 0 ? 0.1 : 0.9
            #expect(run(&grid, at: 1_000 + 20 * Double(k) + lateness) == [1_000 + 20 * Double(k)])
        }
    }

    /// The grid lies on multiples of the period whatever the first firing's phase: a firing 3 ms
    /// early (the media port's reader fires there) runs the coming grid tick, one 7 ms late the
    /// past one, and the firings after them run one tick each.
    @Test func theGridLiesOnMultiplesOfThePeriod() {
        var early = TickGrid(periodMilliseconds: 20)
        #expect(run(&early, at: 997) == [1_000])
        #expect(run(&early, at: 1_017) == [1_020])
        #expect(early.next == Self.ms(1_040))
        var late = TickGrid(periodMilliseconds: 20)
        #expect(run(&late, at: 1_007) == [1_000])
        #expect(run(&late, at: 1_017) == [1_020])
    }

    /// A firing 45 ms late runs the two missed ticks and its own, on the grid; the next
    /// on-time firing runs one again.
    @Test func lateFiringCatchesUp() {
        var grid = TickGrid(periodMilliseconds: 20)
        #expect(run(&grid, at: 0) == [0])
        #expect(run(&grid, at: 65) == [20, 40, 60])
        #expect(run(&grid, at: 80) == [80])
        #expect(run(&grid, at: 81) == [])
    }

    /// More than five ticks behind: five run, then the grid restarts at the firing's time, on
    /// the grid's multiples.
    @Test func hopelesslyBehindRestarts() {
        var grid = TickGrid(periodMilliseconds: 20)
        #expect(run(&grid, at: 0) == [0])
        #expect(run(&grid, at: 503) == [20, 40, 60, 80, 100])
        #expect(grid.next == Self.ms(520))
        #expect(run(&grid, at: 520) == [520])
    }

    /// The grid ticks a restart skips are counted: 120 through 500 ms (20 ticks) after five
    /// caught up; a late firing that catches up drops none.
    @Test func aRestartCountsTheTicksItDrops() {
        var grid = TickGrid(periodMilliseconds: 20)
        _ = grid.advance(at: Self.ms(0))
        let caughtUp = grid.advance(at: Self.ms(65))
        #expect(caughtUp.count == 3 && caughtUp.dropped == 0)
        let restarted = grid.advance(at: Self.ms(560))
        #expect(restarted.count == 5 && restarted.dropped == 20)
    }
}
