import ChorusCore
import Foundation

/// Call quality, live: once a second every established participant's `CallQuality` is fed what
/// the room measured, and each warning raised or recovered becomes a `call.quality.warning` or
/// `call.quality.recovered` event (on the event stream, and as webhooks). The room's own load
/// is judged too: a room whose ticks come due late (its queue could not keep up) raises
/// `overloadedRoom` as a room-wide event.
extension RoomCore {
    static let qualityPeriodNanoseconds: UInt64 = 1_000_000_000

    /// Each established member's second, judged: in a big room each on its stripe's tick
    /// (`RoomCore+Stripes`: no tick judges 3,000 at once), in a small one all on the room's
    /// second. The room's load is judged on the room's second.
    func qualityTick(now: MediaTime) {
        let striped = stripesMembers
        if striped {
            forEachMemberInDueStripes { participant in
                if participant.state == .established { evaluateQuality(of: participant, now: now) }
            }
        }
        guard let due = nextQualityAt else {
            nextQualityAt = now.adding(nanoseconds: Self.qualityPeriodNanoseconds)
            return
        }
        guard now >= due else { return }
        nextQualityAt = now.adding(nanoseconds: Self.qualityPeriodNanoseconds)
        if !striped {
            for participant in members where participant.state == .established { evaluateQuality(of: participant, now: now) }
        }
        if let change = roomLoad.evaluate() { emitRoomLoad(change) }
    }

    private func evaluateQuality(of participant: Participant, now: MediaTime) {
        for change in participant.quality.evaluate(qualitySample(participant, now: now)) {
            emitQuality(change, participant: participant)
        }
    }

    private func qualitySample(_ participant: Participant, now: MediaTime) -> CallQuality.Sample {
        let statistics = participant.audio.receive.jitterBuffer.statistics
        let sends = participant.answer.analysis.audio.offerDirection
        let video = participant.video.publisher
        let showing = !participant.videoPaused && video?.lastPacketAt != nil
        return CallQuality.Sample(
            packetsReceived: statistics.packetsReceived, packetsLost: statistics.lost, jitterMs: statistics.jitterMs,
            downlinkLossPercent: participant.audio.receivedReport ? Double(participant.audio.reportedLossPercent) : nil,
            roundTripMs: participant.transport.roundTripNanoseconds.map { Double($0) / 1e6 },
            jitterBufferDelayMs: statistics.currentDelayMs,
            secondsSinceAudio: participant.lastAudioAt.map { Self.seconds(now, since: $0) },
            expectsAudio: !participant.audioMuted && (sends == .sendrecv || sends == .sendonly),
            secondsSinceVideo: showing ? video?.lastPacketAt.map { Self.seconds(now, since: $0) } : nil)
    }

    private func emitQuality(_ change: CallQuality.Change, participant: Participant) {
        var fields = participantFields(participant.callId)
        switch change {
        case .raised(let warning, let value, let threshold):
            fields["warning"] = .string(warning.name.warning)
            fields["direction"] = .string(warning.name.direction)
            fields["value"] = .int(Self.wholeNumber(value))
            fields["threshold"] = .int(Self.wholeNumber(threshold))
            if let mos = participant.quality.lastMOS { fields["mos"] = .string(String(format: "%.2f", mos)) }
            emit(.callQualityWarning, fields)
        case .recovered(let warning, let seconds):
            fields["warning"] = .string(warning.name.warning)
            fields["direction"] = .string(warning.name.direction)
            fields["durationSeconds"] = .int(seconds)
            emit(.callQualityRecovered, fields)
        }
    }

    private func emitRoomLoad(_ change: RoomLoad.Change) {
        switch change {
        case .overloaded(let latePercent):
            emit(.callQualityWarning, ["warning": .string("overloadedRoom"), "value": .int(latePercent),
                                       "threshold": .int(RoomLoad.triggerPercent)])
        case .recovered(let seconds):
            emit(.callQualityRecovered, ["warning": .string("overloadedRoom"), "durationSeconds": .int(seconds)])
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
