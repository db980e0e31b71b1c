import ChorusCore
import CongestionControl
import RTP
import VideoForwarder

/// One burst of a probe: how many padding packets of which cluster go to which subscriber now.
/// The video router writes them on the subscriber's RTX stream.
struct ProbeBurst: Equatable {
    let callId: CallID
    let cluster: ProbeCluster
    let packets: Int
}

/// Bandwidth probes toward subscribers: the send-side estimator only learns the rate the path
/// carries from what is sent on it, so a subscriber whose estimate sits below what its slots
/// could show is sent short bursts of RTX padding (RFC 4588 streams carry padding-only packets,
/// which receivers count and drop) at the cluster's rate, and its transport-cc feedback tells
/// how fast they arrived.
///
/// The room has no timer finer than its 20 ms tick, so a cluster goes out as two bursts one
/// tick apart, each half of the cluster's rate × 20 ms: the send interval is then 20 ms and
/// the send rate the cluster's, and a bottleneck slower than that spreads the bursts' arrivals,
/// which is what the estimator measures. Coarser than libwebrtc's 5 ms pacing: on a shaped
/// link each burst queues for up to 20 ms at the probed rate.
extension BandwidthStage {
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
    /// The first wait between probes for a paused slot, and the longest.
    static let pausedProbeBackoffNanoseconds: ClosedRange<UInt64> = 2_000_000_000...8_000_000_000

    /// One subscriber's probe under way: its cluster, and the bursts still to send.
    struct ProbeInFlight {
        let cluster: ProbeCluster
        var burstsLeft: Int
    }

    /// Per tick: the due half of every probe under way, and the probes the estimators ask for
    /// now, as bursts for the video router to send.
    func probeBursts(now: MediaTime) -> [ProbeBurst] {
        var bursts: [ProbeBurst] = []
        for member in probeCandidates where member.established {
            // A participant without an RTX slot cannot be probed, and its estimator keeps any
            // request until it can.
            guard member.probeable else {
                if member.probe != nil { member.probe = nil }
                continue
            }
            if member.probe == nil, let cluster = member.connection.probeRequest(now: now) {
                member.probe = ProbeInFlight(cluster: cluster, burstsLeft: 2)
            }
            guard var probe = member.probe else { continue }
            bursts.append(ProbeBurst(callId: member.callId, cluster: probe.cluster, packets: Self.burstPackets(probe.cluster)))
            probe.burstsLeft -= 1
            member.probe = probe.burstsLeft > 0 ? probe : nil
        }
        return bursts
    }

    /// Half the cluster's rate × one tick of padding packets, within the burst bounds.
    static func burstPackets(_ cluster: ProbeCluster) -> Int {
        let tickBytes = cluster.targetBitrate / 8 * RoomCore.tickMilliseconds / 1_000
        let packetBytes = RTPHeader.fixedLength + VideoRouter.probePaddingBytes
        let rateBound = Int(clamping: UInt64(max(cluster.targetBitrate, 0)) / 8 * probeBurstMaximumNanoseconds / 1_000_000_000)
        let burstBytes = max(tickBytes / 2, min(minimumProbeBurstBytes, rateBound))
        return min(max((burstBytes + packetBytes - 1) / packetBytes, (cluster.minimumPackets + 1) / 2),
                   maximumProbePacketsPerBurst)
    }

    /// A slot paused for bandwidth sends nothing, so the estimate cannot grow past what the
    /// audio carries: ask for a probe at what the lowest paused layer needs, with headroom, and
    /// the slot resumes once the probe shows the link carries it (and a link that opened wide
    /// is followed up exponentially, as at the start of a call). Each probe overfills a link
    /// that is still thin for a moment (and the audio queues behind it), so the probes back off:
    /// 2 s, 4 s, then 8 s apart while the slot stays paused.
    func pausedSlots(_ needs: [PausedSlotNeed], now: MediaTime) {
        for paused in needs {
            guard let member = byCallId[paused.callId] else { continue }
            guard let need = paused.need else {
                member.pausedProbe = nil
                continue
            }
            let backoff = member.pausedProbe?.backoffNanoseconds ?? Self.pausedProbeBackoffNanoseconds.lowerBound
            if let last = member.pausedProbe?.at, now.nanoseconds(since: last) < backoff { continue }
            member.pausedProbe = (now, member.pausedProbe == nil
                ? backoff : min(backoff * 2, Self.pausedProbeBackoffNanoseconds.upperBound))
            let target = Double(paused.budget + Self.audioReserveBitsPerSecond + need) * LayerAllocator.upgradeHeadroom
            member.connection.requestProbe(bitrate: Int(target), probeFurther: true, now: now)
        }
    }
}
