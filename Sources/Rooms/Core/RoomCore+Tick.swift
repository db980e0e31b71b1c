import AudioMixer
import ChorusCore

extension RoomCore {
    /// One firing of the room's clock at `now`: the 20 ms audio ticks due on the tick grid
    /// (`TickGrid`: late firings caught up, slightly early ones not skipped), then the video
    /// tick, the bandwidth stage's samples and probes, the connections' timers and the quality
    /// monitor's second.
    public func tick(now: MediaTime, into output: inout RoomOutput) {
        let due = tickGrid.advance(at: now)
        quality.noteDueTicks(due.count)
        if due.count > 1 { output.counters.audioTicksLate &+= due.count - 1 }
        output.counters.audioTicksDropped &+= due.dropped
        stripes.advance(byTicks: due.count + due.dropped)
        for index in 0..<due.count {
            audioTicksDue &+= 1
            if let every = media?.faults.skipEveryNthAudioTick, every > 1, audioTicksDue % UInt64(every) == 0 {
                continue
            }
            audioTick(now: due.first.adding(nanoseconds: UInt64(index) &* tickGrid.periodNanoseconds), into: &output)
        }
        videoTick(now: now, into: &output)
        pollConnections(now: now, into: &output)
        quality.tick(now: now, stripes: dueStripes, sample: { qualitySample($0, now: now) }, into: &output)
    }

    /// The stripes of once-a-second work, in a room big enough to spread it (`MemberStripes`).
    var dueStripes: MemberStripes? { joinOrder.count >= stripedMemberMinimum ? stripes : nil }

    /// One 20 ms audio tick: the audio stage mixes and sends; its dominant speaker goes to the
    /// video router (slots rank recent speakers), its full mix to the taps.
    private func audioTick(now: MediaTime, into output: inout RoomOutput) {
        let result = audio.tick(now: now, into: &output)
        if case .some(.some(let speaker)) = result.dominantSpeaker {
            video.noteDominantSpeaker(speaker, now: now, budgets: { self.bandwidth.budget(of: $0) }, into: &output)
        }
        guard taps.tapsFullMix else { return }
        let tracks = taps.recordsTracks ? trackInputs() : []
        for callId in taps.tick(now: now, fullMix: result.fullMix, tracks: tracks, into: &output) {
            if let member = members[callId] { audio.capturePlayout(member.audio, true) }
        }
    }

    /// What the recording's tracks take this tick: each established member sending Opus.
    private func trackInputs() -> [TapTrackInput] {
        joinOrder.compactMap { member in
            guard member.state == .established, audio.sendsOpus(member.audio),
                  let playout = audio.playout(member.audio)
            else { return nil }
            return TapTrackInput(callId: member.callId, userId: member.userId, played: playout.played,
                                 muted: playout.muted)
        }
    }

    /// The video router's tick (its layer choice may leave slots paused: the bandwidth stage
    /// then probes), the estimates' samples, and the probe bursts the router writes.
    private func videoTick(now: MediaTime, into output: inout RoomOutput) {
        let paused = video.tick(now: now, budgets: { self.bandwidth.budget(of: $0) }, into: &output)
        if !paused.isEmpty { bandwidth.pausedSlots(paused, now: now) }
        bandwidth.sampleEstimates(now: now, stripes: dueStripes, into: &output)
        for burst in bandwidth.probeBursts(now: now) {
            video.sendProbe(to: burst.callId, cluster: burst.cluster, packets: burst.packets, now: now, into: &output)
        }
    }

    /// One member's second as the quality monitor judges it, from what the stages measured.
    private func qualitySample(_ callId: CallID, now: MediaTime) -> CallQuality.Sample? {
        guard let member = members[callId], let audio = audio.qualityInputs(member.audio) else { return nil }
        let statistics = audio.jitterBuffer
        let video = video.lastCameraPacket(of: callId)
        return CallQuality.Sample(
            packetsReceived: statistics.packetsReceived, packetsLost: statistics.lost, jitterMs: statistics.jitterMs,
            downlinkLossPercent: audio.downlinkLossPercent.map(Double.init),
            roundTripMs: member.connection.roundTripNanoseconds.map { Double($0) / 1e6 },
            jitterBufferDelayMs: statistics.currentDelayMs,
            secondsSinceAudio: audio.lastAudioAt.map { QualityMonitor.seconds(now, since: $0) },
            expectsAudio: !member.audioMuted && member.media.sendsAudio,
            secondsSinceVideo: member.videoPaused ? nil : video.map { QualityMonitor.seconds(now, since: $0) })
    }
}
