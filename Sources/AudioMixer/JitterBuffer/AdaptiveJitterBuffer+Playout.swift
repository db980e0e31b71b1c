import ChorusCore

/// The playout half of `AdaptiveJitterBuffer`: one `pop(now:)` per stretch of audio.
extension AdaptiveJitterBuffer {
    /// Pops before an audible (in-speech) delay adjustment may follow the previous one: soon
    /// after a stretch (late loss is worse), a second after a drop (dropping speech is audible,
    /// and a little extra delay is cheap).
    static let stretchCooldownPops = 10
    static let dropCooldownPops = 50
    /// Pops between drops in quiet audio (inaudible there, but the delay estimate needs a few
    /// pops to follow each step).
    static let quietDropPops = 5

    /// What to play for the stretch of audio starting at `now` (see the type's doc comment).
    public mutating func pop(now: MediaTime) -> JitterBufferOutput {
        let nowNs = Int64(clamping: now.nanoseconds)
        if phase != .playing {
            guard startIfDue(nowNs) else { return waitingOutput() }
        }
        let delay = nowNs &- baseArrival(ofTimestamp: cursor)
        // A 1/16 low-pass: timer lateness and single outliers must not trigger adjustments.
        filteredDelay &+= (delay &- filteredDelay) / 16
        if cooldown > 0 { cooldown -= 1 }
        let output = playoutStep(nowNs)
        statistics.currentTargetMs = Double(targetDelay) / 1e6
        statistics.currentDelayMs = Double(filteredDelay) / 1e6
        statistics.jitterMs = Double(estimator.jitterQuantile) / 1e6
        return output
    }

    /// Begins (or, after a stall or DTX, resumes) playout once the earliest buffered packet has
    /// waited the target delay beyond its fastest possible arrival.
    private mutating func startIfDue(_ now: Int64) -> Bool {
        guard let first = ring.firstBuffered(from: nextSequence) ?? ring.lowestBuffered(),
              let slot = ring.buffered(first) else { return false }
        guard now >= baseArrival(ofTimestamp: slot.timestamp) &+ targetDelay else { return false }
        if case .idle = phase, first > nextSequence {
            // Sent while we were idle and never arrived.
            countLost(Int(min(first - nextSequence, UInt64(ring.capacity))))
        }
        nextSequence = first
        cursor = slot.timestamp
        phase = .playing
        concealedRun = 0
        cooldown = 0
        filteredDelay = now &- baseArrival(ofTimestamp: cursor)
        return true
    }

    private mutating func waitingOutput() -> JitterBufferOutput {
        switch phase {
        case .notStarted, .playing:
            return .notStarted
        case .idle(let dtx):
            statistics.silentFrames += 1
            return dtx ? .dtx(samples: configuration.tickSamples) : .silence(samples: configuration.tickSamples)
        }
    }

    private mutating func playoutStep(_ now: Int64) -> JitterBufferOutput {
        skipMissingAlreadyConcealed()
        guard let sequence = ring.firstBuffered(from: nextSequence), let slot = ring.buffered(sequence) else {
            return outputWithoutPacket()
        }
        // Missing sequence numbers are lost packets even when the next one carries the marker
        // bit: DTX pauses do not consume sequence numbers, and some senders (aiortc) set the
        // marker on every audio packet. A pause shows as a timestamp gap, handled just below.
        let missing = Int64(sequence - nextSequence)
        let expected = slot.timestamp &- missing &* Int64(packetSamples)
        if expected &- cursor > Int64(packetSamples / 2) {
            return gapOutput(until: expected)
        }
        if missing == 0 { return play(sequence, now: now) }
        return recoverMissing(before: slot, missing: missing)
    }

    /// After a stall (nothing buffered, frames concealed), the packets that were missing during
    /// it are lost for good: skip them without concealing their time a second time.
    private mutating func skipMissingAlreadyConcealed() {
        guard let sequence = ring.firstBuffered(from: nextSequence), sequence > nextSequence,
              let slot = ring.buffered(sequence), !slot.marker else { return }
        let missing = Int64(sequence - nextSequence)
        let duration = Int64(packetSamples)
        let firstExpected = slot.timestamp &- missing &* duration
        let passed = min(max((cursor &- firstExpected &+ duration / 2) / duration, 0), missing)
        guard passed > 0 else { return }
        countLost(Int(passed))
        nextSequence += UInt64(passed)
    }

    /// Nothing buffered: the sender is in DTX, or packets are late or lost. Conceal for a
    /// while, then call it silence and wait for the next talkspurt to re-anchor playout.
    private mutating func outputWithoutPacket() -> JitterBufferOutput {
        let tick = configuration.tickSamples
        if lastPlayedWasDTX {
            phase = .idle(dtx: true)
            statistics.silentFrames += 1
            return .dtx(samples: tick)
        }
        if concealedRun + packetSamples > concealmentLimit {
            phase = .idle(dtx: false)
            statistics.silentFrames += 1
            return .silence(samples: tick)
        }
        concealedRun += packetSamples
        cursor &+= Int64(packetSamples)
        statistics.concealedFrames += 1
        return .conceal(samples: packetSamples)
    }

    private var concealmentLimit: Int {
        Int(samples(fromMilliseconds: configuration.maximumConcealmentMs))
    }

    /// The next packet is in sequence but later in time: the sender paused (DTX). Silence is
    /// the cheapest place to steer the delay, so shorten or lengthen it here first.
    private mutating func gapOutput(until expected: Int64) -> JitterBufferOutput {
        let tick = Int64(configuration.tickSamples)
        let tickNs = nanoseconds(fromSamples: tick)
        let gap = expected &- cursor
        let excess = filteredDelay &- targetDelay
        statistics.silentFrames += 1
        if excess < -tickNs / 2 {
            // Too little delay: hold the cursor, one more tick of silence.
            statistics.insertedFrames += 1
            filteredDelay &+= tickNs
            return .dtx(samples: Int(tick))
        }
        let played = min(gap, tick)
        var advance = played
        if excess > tickNs / 2, gap > played {
            // Too much delay: skip up to one extra tick of the silence.
            let skipped = min(gap - played, tick)
            advance += skipped
            filteredDelay &-= nanoseconds(fromSamples: skipped)
        }
        cursor &+= advance
        return .dtx(samples: Int(played))
    }

    /// The packet after the due one is here but the due one is not: it is lost now.
    private mutating func recoverMissing(before next: JitterPacketRing.Slot, missing: Int64) -> JitterBufferOutput {
        countLost(1)
        nextSequence += 1
        let duration = packetSamples
        if concealedRun + duration > concealmentLimit {
            cursor &+= Int64(duration)
            statistics.silentFrames += 1
            return .silence(samples: duration)
        }
        let gap = next.timestamp &- cursor
        let unit = Int64(AudioCodecFormat.minimumFrameSamples)
        if missing == 1, configuration.inbandFEC, !next.payload.isEmpty,
           gap >= unit, gap <= Int64(AudioCodecFormat.maxPacketSamples) {
            cursor = next.timestamp
            statistics.fecRecoveries += 1
            return .recoverWithFEC(nextPayload: next.payload, samples: Int(gap / unit * unit))
        }
        concealedRun += duration
        cursor &+= Int64(duration)
        statistics.concealedFrames += 1
        return .conceal(samples: duration)
    }

    /// The due packet is here. Before playing it, steer the delay if it is far off target:
    /// too low → insert a concealed frame (the cursor waits); too high → drop this packet
    /// when the next one is here to take its place.
    private mutating func play(_ sequence: UInt64, now: Int64) -> JitterBufferOutput {
        let excess = filteredDelay &- targetDelay
        // Thresholds scale with the larger of packet and tick, so short packets (10 ms) do not
        // make the steering twitchier than 20 ms ones.
        let stepNs = nanoseconds(fromSamples: Int64(max(packetSamples, configuration.tickSamples)))
        if excess < -stepNs / 2, cooldown == 0 {
            cooldown = Self.stretchCooldownPops
            statistics.insertedFrames += 1
            filteredDelay &+= nanoseconds(fromSamples: Int64(configuration.tickSamples))
            return .conceal(samples: configuration.tickSamples)
        }
        // Beyond two steps over target, drop one packet per cooldown; beyond 100 ms, one per
        // pop. Less excess is shed where it is inaudible: in a pause (DTX, a timestamp gap) or
        // while the decoded audio is quiet (`sourceIsQuiet`, told by the owner: senders without
        // DTX, aiortc and Chrome by default, never pause the packet stream).
        let urgent = excess > max(100_000_000, 4 * stepNs)
        let inSpeech = excess > 2 * stepNs && (cooldown == 0 || urgent)
        let inQuiet = sourceIsQuiet && excess > stepNs * 3 / 4 && cooldown <= Self.dropCooldownPops - Self.quietDropPops
        let sequence = inSpeech || inQuiet ? dropIfFollowed(sequence) : sequence
        guard let slot = ring.consume(sequence) else { return outputWithoutPacket() }
        return emit(slot, now: now)
    }

    /// Drops `sequence` if the next packet directly follows it in time (the middle of speech:
    /// skipping into the next talkspurt could jump the cursor over a long silence). Returns the
    /// sequence number to play now.
    private mutating func dropIfFollowed(_ sequence: UInt64) -> UInt64 {
        guard let current = ring.buffered(sequence), let next = ring.buffered(sequence + 1),
              next.timestamp &- current.timestamp <= Int64(packetSamples + packetSamples / 2)
        else { return sequence }
        _ = ring.consume(sequence)
        statistics.discarded += 1
        statistics.droppedFrames += 1
        filteredDelay &-= nanoseconds(fromSamples: Int64(packetSamples))
        cooldown = Self.dropCooldownPops
        return sequence + 1
    }

    /// Plays a consumed packet: moves the cursor past it and records how long it waited.
    private mutating func emit(_ slot: JitterPacketRing.Slot, now: Int64) -> JitterBufferOutput {
        let playedSamples = slot.samples > 0 ? slot.samples : packetSamples
        cursor = slot.timestamp &+ Int64(playedSamples)
        nextSequence = slot.sequence + 1
        concealedRun = 0
        lastPlayedWasDTX = slot.payload.count <= configuration.dtxPayloadMaximumBytes
        hasPlayed = true
        lossAverage *= 0.99
        let waited = Double(max(0, now &- slot.arrival)) / 1e6
        delaySum += waited
        delayCount += 1
        statistics.meanDelayMs = delaySum / Double(delayCount)
        statistics.maxDelayMs = max(statistics.maxDelayMs, waited)
        // An empty payload (a padding-only packet) carries no audio: play its time as silence.
        if slot.payload.isEmpty { return .dtx(samples: playedSamples) }
        return .frame(slot.payload)
    }
}
