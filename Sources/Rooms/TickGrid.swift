import ChorusCore

/// The room's 20 ms tick grid: which ticks a timer firing at `now` runs. A sans-IO value the
/// Room owns; its timer handler calls `run(at:_:)` with the current time.
///
/// Each tick keeps its place on a fixed grid (so RTP timestamps and send times agree), a late
/// firing catches up at most `maxCatchUp` ticks (beyond that the grid restarts: old audio is
/// no use to anyone), and a firing up to half a period *before* its grid time runs that tick.
/// The last rule matters: Dispatch fires with lateness that varies by a fraction of a
/// millisecond, and a grid anchored on a late first firing would skip the tick of every less
/// late firing and run two at once on the next, a 20 ms wobble in every mix stream (measured
/// by `chorus load` as 7–10 ms of RFC 3550 jitter at every listener before this rule).
struct TickGrid: Sendable {
    let periodNanoseconds: UInt64
    let maxCatchUp: Int
    /// The grid time of the next tick; nil before the first firing.
    private(set) var next: MediaTime?

    init(periodMilliseconds: Int, maxCatchUp: Int = 5) {
        periodNanoseconds = UInt64(periodMilliseconds) * 1_000_000
        self.maxCatchUp = maxCatchUp
    }

    /// Calls `tick` with the grid time of each tick due at `now`, in order.
    mutating func run(at now: MediaTime, _ tick: (MediaTime) -> Void) {
        let horizon = now.adding(nanoseconds: periodNanoseconds / 2)
        var due = next ?? now
        var ran = 0
        while due <= horizon, ran < maxCatchUp {
            tick(due)
            due = due.adding(nanoseconds: periodNanoseconds)
            ran += 1
        }
        // Still behind after catching up: restart the grid from now.
        next = due <= now ? now.adding(nanoseconds: periodNanoseconds) : due
    }
}
