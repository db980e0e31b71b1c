import ChorusCore
import Foundation

/// Call quality, live: once a second every established member's `CallQuality` is fed what the
/// room measured of it, and each warning raised or recovered becomes a `call.quality.warning`
/// or `call.quality.recovered` event (on the event stream, and as webhooks). The room's own
/// load is judged too: a room whose ticks come due late (its queue could not keep up) raises
/// `overloadedRoom` as a room-wide event.
///
/// A value the room core owns and drives: `add`/`remove`/`setEstablished` members,
/// `noteDueTicks` on each firing, `tick` with the stripes of once-a-second work and a way to
/// sample a member (the core builds each sample from the other stages' figures, so this stage
/// reads none of their state).
struct QualityMonitor {
    static let periodNanoseconds: UInt64 = 1_000_000_000

    private(set) var members: [QualityMember] = []
    private var byCallId: [CallID: QualityMember] = [:]
    /// When the room's second is next due (a small room judges everyone then, and the room's load).
    private var nextDue: MediaTime?
    private var roomLoad = RoomLoad()

    mutating func add(_ callId: CallID, userId: UserID) {
        let member = QualityMember(callId: callId, userId: userId)
        members.append(member)
        byCallId[callId] = member
    }

    mutating func remove(_ callId: CallID) {
        guard let member = byCallId.removeValue(forKey: callId) else { return }
        members.removeAll { $0 === member }
    }

    func setEstablished(_ callId: CallID) { byCallId[callId]?.established = true }

    /// A firing of the room's clock ran `count` grid ticks (more than one: it came late).
    mutating func noteDueTicks(_ count: Int) { roomLoad.note(dueTicks: count) }

    /// The call record's summary of a member's quality: MOS and each warning's count and seconds.
    func summary(of callId: CallID) -> CallQualitySummary? { byCallId[callId]?.quality.summary }

    /// Seconds judged so far (tests).
    func secondsJudged(_ callId: CallID) -> Int? { byCallId[callId]?.quality.seconds }

    /// Each established member's second, judged: in a big room each on its stripe's tick (no
    /// tick judges 3,000 at once), in a small one all on the room's second. The room's load is
    /// judged on the room's second.
    mutating func tick(now: MediaTime, stripes: MemberStripes?, sample: (CallID) -> CallQuality.Sample?,
                       into output: inout RoomOutput) {
        if let stripes {
            stripes.forEachDue(in: members) { member in
                if member.established { evaluate(member, now: now, sample: sample, into: &output) }
            }
        }
        guard let due = nextDue else {
            nextDue = now.adding(nanoseconds: Self.periodNanoseconds)
            return
        }
        guard now >= due else { return }
        nextDue = now.adding(nanoseconds: Self.periodNanoseconds)
        if stripes == nil {
            for member in members where member.established { evaluate(member, now: now, sample: sample, into: &output) }
        }
        switch roomLoad.evaluate() {
        case .overloaded(let latePercent)?:
            output.emit(.callQualityWarning(QualityWarningEvent(
                member: nil, warning: "overloadedRoom", direction: nil, value: latePercent,
                threshold: RoomLoad.triggerPercent, mos: nil)), at: now)
        case .recovered(let seconds)?:
            output.emit(.callQualityRecovered(QualityRecoveryEvent(
                member: nil, warning: "overloadedRoom", direction: nil, durationSeconds: seconds)), at: now)
        case nil:
            break
        }
    }

    private func evaluate(_ member: QualityMember, now: MediaTime, sample: (CallID) -> CallQuality.Sample?,
                          into output: inout RoomOutput) {
        guard let sample = sample(member.callId) else { return }
        let who = EventMember(callId: member.callId, userId: member.userId)
        for change in member.quality.evaluate(sample) {
            switch change {
            case .raised(let warning, let value, let threshold):
                output.emit(.callQualityWarning(QualityWarningEvent(
                    member: who, warning: warning.name.warning, direction: warning.name.direction,
                    value: Self.wholeNumber(value), threshold: Self.wholeNumber(threshold),
                    mos: member.quality.lastMOS)), at: now)
            case .recovered(let warning, let seconds):
                output.emit(.callQualityRecovered(QualityRecoveryEvent(
                    member: who, warning: warning.name.warning, direction: warning.name.direction,
                    durationSeconds: seconds)), at: now)
            }
        }
    }

    /// A measured value as an event's integer: values come from peers' timestamps and reports,
    /// so a non-finite or absurd one is clamped rather than trapped on.
    static func wholeNumber(_ value: Double) -> Int {
        value.isFinite ? Int(min(max(value.rounded(), -1e12), 1e12)) : 0
    }

    static func seconds(_ now: MediaTime, since then: MediaTime) -> Double {
        now >= then ? Double(now.nanoseconds(since: then)) / 1e9 : 0
    }
}

/// One member as the quality monitor keeps it. A class confined to the stage.
final class QualityMember {
    let callId: CallID
    let userId: UserID
    var established = false
    var quality = CallQuality()

    init(callId: CallID, userId: UserID) {
        self.callId = callId
        self.userId = userId
    }
}

/// The room's own load: the share of audio ticks that came due late (the room's timer fired
/// after a later tick was already due, so the tick grid caught up several at once) over the
/// last two seconds. Over `triggerPercent` raises `overloadedRoom`; it recovers after three
/// seconds under `recoverPercent`.
struct RoomLoad {
    static let triggerPercent = 10
    static let recoverPercent = 2
    enum Change: Equatable { case overloaded(latePercent: Int), recovered(afterSeconds: Int) }

    private var ticks = 0
    private var late = 0
    private var seconds: [(ticks: Int, late: Int)] = []
    private var overloadedFor: Int?
    private var goodFor = 0

    mutating func note(dueTicks: Int) {
        ticks += dueTicks
        if dueTicks > 1 { late += dueTicks - 1 }
    }

    mutating func evaluate() -> Change? {
        seconds.append((ticks, late))
        ticks = 0
        late = 0
        if seconds.count > 2 { seconds.removeFirst() }
        let total = seconds.reduce(0) { $0 + $1.ticks }, behind = seconds.reduce(0) { $0 + $1.late }
        let percent = total > 0 ? behind * 100 / total : 0
        if let since = overloadedFor {
            overloadedFor = since + 1
            goodFor = percent <= Self.recoverPercent ? goodFor + 1 : 0
            if goodFor >= 3 {
                overloadedFor = nil
                return .recovered(afterSeconds: since + 1)
            }
            return nil
        }
        guard percent >= Self.triggerPercent, total >= 25 else { return nil }
        overloadedFor = 0
        goodFor = 0
        return .overloaded(latePercent: percent)
    }
}
