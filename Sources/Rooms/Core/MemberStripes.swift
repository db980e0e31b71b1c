/// Once-a-second work per member, spread over the second in a big room. A member's downlink
/// estimate sample and its call-quality evaluation are due once a second; a room that did them
/// for every member on the tick their second came up, or walked every member on every tick to
/// ask, paid for it in cache misses: walking 3,000 participants' objects costs far more than
/// the few instructions each check is (`perf` put the video tick's and the probes' member walks
/// of an audio-only room of 3,000 at ~8 % of the server's CPU, callgrind at 1.5 %).
///
/// So a room of `RoomCore.stripedMemberMinimum` (200) or more splits its members into 50
/// stripes (member `i` of a stage's join-ordered list in stripe `i % 50`) and each 20 ms grid
/// tick, run or dropped, has its stripe: a member's turn comes once a second, and a tick visits a
/// fiftieth of the room. A smaller room keeps per-member clocks and the room's quality second,
/// whose exact timing its tests pin down. A member who joins or leaves shifts the later ones by
/// one: one of them may have its turn a tick early or late that second.
///
/// A value: the room core advances it with the grid ticks of each firing and hands it to the
/// stages that stripe their work (bandwidth, quality), which apply it to their own lists.
struct MemberStripes: Sendable {
    /// 1 s of 20 ms ticks.
    static let perSecond = 50
    private var cursor = 0
    /// The stripes of this firing.
    private(set) var due = (first: 0, count: 0)

    /// Moves the stripes on by the `ticks` grid ticks a firing covered (run or dropped): the
    /// stripes those ticks own are the ones `forEachDue` visits until the next call.
    mutating func advance(byTicks ticks: Int) {
        let count = min(Self.perSecond, max(0, ticks))
        due = (first: cursor, count: count)
        cursor = (cursor + count) % Self.perSecond
    }

    /// Calls `body` for each element of `list` whose stripe is due in this firing.
    func forEachDue<Element>(in list: [Element], _ body: (Element) -> Void) {
        let count = list.count
        for offset in 0..<due.count {
            var index = (due.first + offset) % Self.perSecond
            while index < count {
                body(list[index])
                index += Self.perSecond
            }
        }
    }
}
