import ChorusCore

/// The room's 20 ms tick grid: which ticks a timer firing at `now` runs. A sans-IO value the
/// room core owns; each timer firing calls `advance(at:)` with the current time.
///
/// Each tick keeps its place on a fixed grid (so RTP timestamps and send times agree), a late
/// firing catches up at most `maxCatchUp` ticks (beyond that the grid restarts: old audio is
/// no use to anyone), and a firing up to half a period *before* its grid time runs that tick.
/// The grid lies on multiples of the period of the monotonic clock, whenever the room's first
/// firing comes: every room's timer fires on those multiples, and the media port's reader fires
/// the ticks of small rooms a little before them (`TickList`), so a first firing anchors on the
/// nearest one (a room anchored on its first firing's phase would have its ticks at arbitrary
/// points between the reader's reads). The last rule matters: Dispatch fires with lateness that varies by a fraction of a
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

    /// The ticks due at `now`: the grid time of the first and how many follow it, one period
    /// apart (none, usually one, a few after a late firing), and how many grid ticks were
    /// dropped because the firing came more than `maxCatchUp` periods late (each a 20 ms hole
    /// in every mix stream's timing, so `/metrics` counts them).
    mutating func advance(at now: MediaTime) -> (first: MediaTime, count: Int, dropped: Int) {
        let horizon = now.adding(nanoseconds: periodNanoseconds / 2)
        let first = next ?? gridPoint(nearest: now)
        var due = first
        var count = 0
        while due <= horizon, count < maxCatchUp {
            due = due.adding(nanoseconds: periodNanoseconds)
            count += 1
        }
        // Still behind after catching up: restart the grid from now.
        guard due <= now else {
            next = due
            return (first, count, 0)
        }
        next = gridPoint(nearest: now).adding(nanoseconds: periodNanoseconds)
        let dropped = Int((now.nanoseconds - due.nanoseconds) / periodNanoseconds) + 1
        return (first, count, dropped)
    }

    /// The multiple of the period nearest `now`.
    private func gridPoint(nearest now: MediaTime) -> MediaTime {
        MediaTime(nanoseconds: (now.nanoseconds + periodNanoseconds / 2) / periodNanoseconds * periodNanoseconds)
    }

    /// Calls `tick` with the grid time of each tick due at `now`, in order.
    mutating func run(at now: MediaTime, _ tick: (MediaTime) -> Void) {
        let due = advance(at: now)
        for index in 0..<due.count { tick(due.first.adding(nanoseconds: UInt64(index) &* periodNanoseconds)) }
    }
}
