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

    /// A first firing 0.3 ms late anchors the grid; later firings 0.1 ms late each still run
    /// exactly their own tick (before, each of them ran none and the next ran two).
    @Test func lessLateFiringsRunTheirTick() {
        var grid = TickGrid(periodMilliseconds: 20)
        #expect(run(&grid, at: 1_000.3) == [1_000.3])
        for k in 1...50 {
            let lateness = k % 2 == 0 ? 0.1 : 0.5
            #expect(run(&grid, at: 1_000 + 20 * Double(k) + lateness) == [1_000.3 + 20 * Double(k)])
        }
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

    /// More than five ticks behind: five run, then the grid restarts from the firing's time.
    @Test func hopelesslyBehindRestarts() {
        var grid = TickGrid(periodMilliseconds: 20)
        #expect(run(&grid, at: 0) == [0])
        #expect(run(&grid, at: 500) == [20, 40, 60, 80, 100])
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
