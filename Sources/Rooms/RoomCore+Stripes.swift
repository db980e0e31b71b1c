import ChorusCore

/// Once-a-second work per member, spread over the second in a big room. A member's downlink
/// estimate sample and its call-quality evaluation are due once a second; a room that did them
/// for every member on the tick their second came up, or walked every member on every tick to
/// ask, paid for it in cache misses: walking 3,000 participants' objects costs far more than
/// the few instructions each check is (`perf` put the video tick's and the probes' member walks
/// of an audio-only room of 3,000 at ~8 % of the server's CPU, callgrind at 1.5 %).
///
/// So a room of `stripedMemberMinimum` (200) or more splits its members into 50 stripes (member `i`
/// in stripe `i % 50`) and each 20 ms grid tick, run or dropped, has its stripe: a member's
/// turn comes once a second, and a tick visits a fiftieth of the room. A smaller room keeps the
/// per-member clocks (`estimateSampledAt`) and the room's quality second, whose exact timing its
/// tests pin down. A member who joins or leaves shifts the later ones by one: one of them may
/// have its turn a tick early or late that second.
extension RoomCore {
    /// 1 s of 20 ms ticks.
    static let stripesPerSecond = 50

    /// Whether this room spreads its once-a-second work over stripes.
    var stripesMembers: Bool { members.count >= stripedMemberMinimum }

    /// Moves the stripes on by the `ticks` grid ticks a firing covered (run or dropped): the
    /// stripes those ticks own are the ones `forEachMemberInDueStripes` visits until the next call.
    func advanceStripes(byTicks ticks: Int) {
        let count = min(Self.stripesPerSecond, max(0, ticks))
        dueStripes = (first: stripeCursor, count: count)
        stripeCursor = (stripeCursor + count) % Self.stripesPerSecond
    }

    /// Calls `body` for each member whose stripe is due in this firing.
    func forEachMemberInDueStripes(_ body: (Participant) -> Void) {
        let count = members.count
        for offset in 0..<dueStripes.count {
            var index = (dueStripes.first + offset) % Self.stripesPerSecond
            while index < count {
                body(members[index])
                index += Self.stripesPerSecond
            }
        }
    }
}
