import ChorusCore
import CongestionControl

/// What the room knows of the path toward each member, and the probes that teach it more: the
/// connection's own send-side estimate (transport-cc) or else the member's last REMB, the video
/// budget the router shares among its slots, one sample of it a second (the call record's
/// summary and `/metrics`), and the bandwidth probes sent on a subscriber's RTX stream.
///
/// A value the room core owns and drives: `add`/`remove`/`setEstablished` members, `receiveREMB`
/// per REMB, `pausedSlots` with what the video router's layer choice left paused, `tick` every
/// 20 ms with the stripes of once-a-second work. It reads only its members' connections (the
/// member seam: their estimators) and writes nothing but its own state; the probe bursts it
/// decides come out as `ProbeBurst`s, which the core has the video router write.
struct BandwidthStage {
    /// What the audio mix needs first: Opus at 32 kbit/s in 50 packets a second, each with
    /// about 60 bytes of RTP, extensions, SRTP tag and UDP/IP (24 kbit/s).
    static let audioReserveBitsPerSecond = 56_000

    /// All members in join order (their samples), and those that may be probed (members with
    /// video: an audio-only room of thousands is never walked for probes).
    private(set) var members: [BandwidthMember] = []
    private var videoMembers: [BandwidthMember] = []
    private(set) var byCallId: [CallID: BandwidthMember] = [:]

    mutating func add(_ callId: CallID, connection: any MemberConnection, hasVideo: Bool, probeable: Bool) {
        let member = BandwidthMember(callId: callId, connection: connection, probeable: probeable)
        members.append(member)
        if hasVideo { videoMembers.append(member) }
        byCallId[callId] = member
    }

    mutating func remove(_ callId: CallID) {
        guard let member = byCallId.removeValue(forKey: callId) else { return }
        members.removeAll { $0 === member }
        videoMembers.removeAll { $0 === member }
    }

    func setEstablished(_ callId: CallID) { byCallId[callId]?.established = true }

    /// A member's REMB: its own estimate of what it receives, its downlink when the server has
    /// no estimate of its own.
    func receiveREMB(_ bitrate: UInt64, from callId: CallID) { byCallId[callId]?.lastREMB = bitrate }

    /// What the router may send a member's video: its downlink less the audio's share; nil
    /// while nothing is known of its link.
    func budget(of callId: CallID) -> VideoBudget? {
        guard let member = byCallId[callId] else { return nil }
        let measured = member.connection.estimatedBitrate
        guard let downlink = measured ?? member.lastREMB.map({ Int(clamping: $0) }) else { return nil }
        return VideoBudget(video: max(downlink - Self.audioReserveBitsPerSecond, 0),
                           measured: measured.map { max($0 - Self.audioReserveBitsPerSecond, 0) })
    }

    /// The member's downlink as the API shows it: the connection's estimate when it has one
    /// (with its parts), else the last REMB; the round-trip time either way.
    func downlink(of callId: CallID) -> DownlinkEstimate? {
        guard let member = byCallId[callId] else { return nil }
        let connection = member.connection
        let rtt = connection.roundTripNanoseconds.map { Int(clamping: $0 / 1_000_000) }
        if let estimate = connection.bandwidthEstimate {
            return DownlinkEstimate(
                bitrate: estimate.targetBitrate, source: "transportCC", delayBasedBitrate: estimate.delayBasedBitrate,
                lossBasedBitrate: estimate.lossBasedBitrate, acknowledgedBitrate: estimate.acknowledgedBitrate,
                lossFraction: estimate.lossFraction, roundTripTimeMilliseconds: rtt)
        }
        return member.lastREMB.map { DownlinkEstimate(bitrate: Int(clamping: $0), source: "remb", roundTripTimeMilliseconds: rtt) }
    }

    /// The member's downlink over its call, for the call record: the last estimate and the
    /// once-a-second samples' mean, lowest and highest (nil if nothing was known).
    func downlinkSummary(of callId: CallID) -> DownlinkSummary? {
        guard let last = downlink(of: callId), let summary = byCallId[callId]?.estimateSummary else { return nil }
        return DownlinkSummary(bitrate: last.bitrate, source: last.source, samples: summary,
                               roundTripTimeMilliseconds: last.roundTripTimeMilliseconds)
    }

    /// Seconds of known downlink sampled so far.
    func sampledSeconds(of callId: CallID) -> Int { byCallId[callId]?.estimateSummary.samples ?? 0 }

    /// When the member's estimate was last sampled (tests).
    func sampledAt(_ callId: CallID) -> MediaTime? { byCallId[callId]?.estimateSampledAt }

    /// Each established member's estimate as one sample, once a second: in a big room on its
    /// stripe's tick, in a small one by its own clock. Samples go to its summary and, through
    /// the output's counters, to `chorus_downlink_estimate_bits_per_second`.
    func sampleEstimates(now: MediaTime, stripes: MemberStripes?, into output: inout RoomOutput) {
        func sample(_ member: BandwidthMember) {
            member.estimateSampledAt = now  // also without an estimate: look again in a second
            guard let bitrate = member.connection.estimatedBitrate else { return }
            member.estimateSummary.add(bitrate)
            output.counters.downlinkEstimates.append(bitrate)
        }
        if let stripes {
            stripes.forEachDue(in: members) { if $0.established { sample($0) } }
        } else {
            for member in members where member.established {
                // The clock first: reading the estimate copies the estimator's state.
                if let last = member.estimateSampledAt, now.nanoseconds(since: last) < 1_000_000_000 { continue }
                sample(member)
            }
        }
    }

    /// Each video member that may be probed, established: for the probe walk.
    var probeCandidates: [BandwidthMember] { videoMembers }
}

/// One member as the bandwidth stage keeps it. A class confined to the stage.
final class BandwidthMember {
    let callId: CallID
    let connection: any MemberConnection
    /// Whether it has an RTX stream to carry probes.
    let probeable: Bool
    var established = false
    /// The last REMB it sent (bit/s).
    var lastREMB: UInt64?
    /// When its estimate was last sampled, and its samples over the call.
    var estimateSampledAt: MediaTime?
    var estimateSummary = EstimateSummary()
    /// A bandwidth probe toward it under way.
    var probe: BandwidthStage.ProbeInFlight?
    /// The last probe asked for its slots paused for bandwidth, and the wait before the next one
    /// (doubling while the link stays short: each probe overfills a thin link for a moment).
    var pausedProbe: (at: MediaTime, backoffNanoseconds: UInt64)?

    init(callId: CallID, connection: any MemberConnection, probeable: Bool) {
        self.callId = callId
        self.connection = connection
        self.probeable = probeable
    }
}
