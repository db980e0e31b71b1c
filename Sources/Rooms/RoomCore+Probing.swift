import ChorusCore
import CongestionControl
import Metrics
import PeerTransport
import RTP

/// Bandwidth probes toward subscribers (issue 16): the send-side estimator only learns the
/// rate the path carries from what is sent on it, so a subscriber whose estimate sits below
/// what its slots could show is sent short bursts of RTX padding (RFC 4588 streams carry
/// padding-only packets, which receivers count and drop) at the cluster's rate, and its
/// transport-cc feedback tells how fast they arrived.
///
/// The room has no timer finer than its 20 ms tick, so a cluster goes out as two bursts one
/// tick apart, each half of the cluster's rate × 20 ms: the send interval is then 20 ms and
/// the send rate the cluster's, and a bottleneck slower than that spreads the bursts' arrivals,
/// which is what the estimator measures. Coarser than libwebrtc's 5 ms pacing: on a shaped
/// link each burst queues for up to 20 ms at the probed rate.
extension RoomCore {
    /// Padding per packet: the most RFC 3550 padding can say (255 bytes, including the count).
    static let probePaddingBytes = 255
    /// A probe's packets per burst at most, whatever its rate.
    static let maximumProbePacketsPerBurst = 64
    /// A probe's bytes per burst at least: more than the burst a token-bucket link (a shaped
    /// access line, a cable modem) lets through at line rate, so that the bursts' arrivals are
    /// spread by the link's rate and not only by the bucket (measured: with ~1 KB bursts a
    /// 300 kbit/s tbf link with a 4 KB bucket was probed at 0.5–1.8 Mbit/s, every time). But
    /// never more than `probeBurstMaximumNanoseconds` at the probed rate: on a link thinner than
    /// that a 6 KB burst queues for most of a second, and the mix's audio with it.
    static let minimumProbeBurstBytes = 6_000
    static let probeBurstMaximumNanoseconds: UInt64 = 100_000_000

    /// One subscriber's probe under way: its cluster, and the burst still to send.
    struct ProbeInFlight {
        let cluster: ProbeCluster
        var burstsLeft: Int
    }

    /// Per video tick: sends the due half of every probe under way, and starts the probes the
    /// estimators ask for now; once a second per participant, its estimate goes to `/metrics`.
    func sendProbes(now: MediaTime) {
        sampleEstimates(now: now)
        for participant in videoMembers {
            guard participant.state == .established else { continue }
            // A probe is RTX padding: a participant without an RTX slot (audio only, most of a
            // big room) cannot be probed, and its estimator keeps any request until it can.
            guard participant.video.slots.contains(where: { $0.rtx != nil }) else {
                if participant.probe != nil { participant.probe = nil }
                continue
            }
            if participant.probe == nil, let cluster = participant.transport.probeRequest(now: now) {
                participant.probe = ProbeInFlight(cluster: cluster, burstsLeft: 2)
            }
            guard var probe = participant.probe else { continue }
            sendProbeBurst(probe.cluster, to: participant, now: now)
            probe.burstsLeft -= 1
            participant.probe = probe.burstsLeft > 0 ? probe : nil
        }
    }

    /// Each established member's estimate as one sample of `chorus_downlink_estimate_bits_per_second`
    /// (a histogram), once a second: the distribution over participant-seconds. A big room
    /// takes its members' turns from the stripes (`RoomCore+Stripes`); a small one asks each
    /// member's clock.
    private func sampleEstimates(now: MediaTime) {
        if stripesMembers {
            forEachMemberInDueStripes { participant in
                guard participant.state == .established else { return }
                participant.estimateSampledAt = now
                recordEstimate(of: participant)
            }
        } else {
            for participant in members where participant.state == .established {
                // The clock first: reading the estimate copies the estimator's state.
                if let last = participant.estimateSampledAt, now.nanoseconds(since: last) < 1_000_000_000 { continue }
                participant.estimateSampledAt = now  // also without an estimate: look again in a second
                recordEstimate(of: participant)
            }
        }
    }

    private func recordEstimate(of participant: Participant) {
        guard let bitrate = participant.transport.estimatedBitrate else { return }
        participant.estimateSummary.add(bitrate)
        Self.estimates.record(bitrate)
    }

    static let estimates = Recorder(label: "chorus_downlink_estimate_bits_per_second", aggregate: true)

    /// Half the cluster's rate × one tick of RTX padding on the subscriber's first slot with
    /// an RTX stream (none without one: padding on a media stream would break its numbering).
    private func sendProbeBurst(_ cluster: ProbeCluster, to participant: Participant, now: MediaTime) {
        guard let index = participant.video.slots.firstIndex(where: { $0.rtx != nil }),
              let rtx = participant.video.slots[index].rtx
        else { return }
        let tickBytes = cluster.targetBitrate / 8 * RoomCore.tickMilliseconds / 1_000
        let packetBytes = RTPHeader.fixedLength + Self.probePaddingBytes
        let rateBound = Int(clamping: UInt64(max(cluster.targetBitrate, 0)) / 8 * Self.probeBurstMaximumNanoseconds / 1_000_000_000)
        let burstBytes = max(tickBytes / 2, min(Self.minimumProbeBurstBytes, rateBound))
        let packets = min(max((burstBytes + packetBytes - 1) / packetBytes, (cluster.minimumPackets + 1) / 2),
                          Self.maximumProbePacketsPerBurst)
        let timestamp = participant.video.slots[index].rewriter.lastTimestamp
        for _ in 0..<packets {
            var packet: [UInt8] = []
            packet.reserveCapacity(packetBytes + 32)
            packet.append(0x80)
            packet.append(rtx.payloadType.rawValue)
            packet.append16(participant.video.slots[index].rtxSequence)
            packet.append32(timestamp)
            packet.append32(rtx.ssrc.rawValue)
            RTPHeaderRewriter.appendPadding(count: Self.probePaddingBytes, to: &packet)
            participant.video.slots[index].rtxSequence &+= 1
            guard participant.transport.sendRTP(packet, probeClusterID: cluster.id, now: now,
                                                transmits: &output.transmits)
            else { return }
            participant.video.statistics.probePacketsSent &+= 1
        }
    }
}
