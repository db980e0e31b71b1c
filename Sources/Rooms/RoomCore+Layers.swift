import ChorusCore
import Metrics
import VideoForwarder

/// Which layer of its publisher each slot forwards (issue 16, item 3). Once a second per
/// subscriber, its downlink estimate (the server's own with transport-cc, else its REMB) minus
/// the audio mix's share is split among its slots by `LayerAllocator` (the first slots first:
/// pins and recent speakers come first in slot order), and each slot's `LayerSwitchPolicy`
/// turns the choice into a move (on the target layer's keyframe, which is requested), a pause
/// for bandwidth (`video.slots`, reason `bandwidth`), or nothing. A publisher with one stream
/// has one layer: a subscriber whose link cannot carry it has the slot paused rather than
/// lowering the publisher for everyone.
extension RoomCore {
    /// What the audio mix needs first: Opus at 32 kbit/s in 50 packets a second, each with
    /// about 60 bytes of RTP, extensions, SRTP tag and UDP/IP (24 kbit/s).
    static let audioReserveBitsPerSecond = 56_000
    static let layerAllocationIntervalNanoseconds: UInt64 = 1_000_000_000
    /// A layer whose last packet is older than this is not offered to subscribers.
    static let layerSilenceNanoseconds: UInt64 = 1_000_000_000

    /// The RID of a publisher's layer, with simulcast.
    func rid(of publisher: CallID, layer: Int) -> String? {
        guard let rids = participants[publisher]?.video.publisher?.simulcast?.rids, rids.indices.contains(layer)
        else { return nil }
        return rids[layer]
    }

    /// The bit/s a subscriber's video may use, nil while nothing is known of its link.
    func videoBudget(of subscriber: Participant) -> Int? {
        let downlink = subscriber.transport.estimatedBitrate ?? subscriber.video.lastREMB.map { Int(clamping: $0) }
        return downlink.map { max($0 - Self.audioReserveBitsPerSecond, 0) }
    }

    /// The budget from the server's own estimate only, nil for a REMB-only subscriber: what
    /// bounds repairs (`RetransmissionLimiter`). A REMB measures what the client receives, not
    /// what its link could carry (a quarter of aiortc's ~100 kbit/s left 5 % loss unrepaired).
    func measuredVideoBudget(of subscriber: Participant) -> Int? {
        subscriber.transport.estimatedBitrate == nil ? nil : videoBudget(of: subscriber)
    }

    /// The publisher's layers being received now, from the lowest quality to the highest: by
    /// keyframe height (VP8), leaving out layers whose keyframe has not been seen yet (no slot
    /// could switch to them, and a layer's bitrate says little while its encoder ramps up);
    /// by bitrate when no height is known (H.264, or before any keyframe).
    func rankedLayers(of publisher: CallID, now: MediaTime) -> [(layer: Int, bitrate: Int, height: Int?)] {
        guard let layers = participants[publisher]?.video.publisher?.layers else { return [] }
        let active = layers.indices.compactMap { index -> (layer: Int, bitrate: Int, height: Int?)? in
            guard layers[index].ssrc != nil, let last = layers[index].lastPacketAt,
                  now.nanoseconds(since: last) < Self.layerSilenceNanoseconds
            else { return nil }
            return (index, Int(clamping: layers[index].bitrate.bitsPerSecond(now: now)), layers[index].height)
        }
        let measured = active.filter { $0.height != nil }
        if measured.isEmpty { return active.sorted { ($0.bitrate, $0.layer) < ($1.bitrate, $1.layer) } }
        return measured.sorted { ($0.height ?? 0, $0.bitrate) < ($1.height ?? 0, $1.bitrate) }
    }

    /// The layer a slot starts with when it is given `publisher`: the best one that fits an
    /// equal share of the subscriber's budget; the lowest while the budget is not known yet
    /// (a new subscriber's link is proven before it is filled, as it would be by a browser);
    /// never one taller than the slot's `maximumHeight`, unless it is the lowest.
    func initialLayer(of publisher: CallID, for subscriber: CallID, slot: Int, now: MediaTime) -> Int {
        let ranked = rankedLayers(of: publisher, now: now)
        guard let lowest = ranked.first else { return 0 }
        guard let viewer = participants[subscriber], let budget = videoBudget(of: viewer) else {
            return lowest.layer
        }
        let share = budget / max(viewer.video.slots.count { $0.assigned != nil }, 1)
        let cap = viewer.video.slots.indices.contains(slot) ? viewer.video.slots[slot].maximumHeight : nil
        return ranked.last { $0.bitrate <= share && (cap == nil || ($0.height ?? 0) <= cap ?? 0) }?.layer ?? lowest.layer
    }

    /// Once a second per subscriber with a known budget: chooses each slot's layer.
    func allocateLayers(now: MediaTime) {
        for viewer in videoMembers {
            guard viewer.state == .established, !viewer.video.slots.isEmpty, let budget = videoBudget(of: viewer)
            else { continue }
            if let last = viewer.video.layersAllocatedAt, now.nanoseconds(since: last) < Self.layerAllocationIntervalNanoseconds {
                continue
            }
            viewer.video.layersAllocatedAt = now
            allocateLayers(of: viewer, budget: budget, now: now)
        }
    }

    private func allocateLayers(of viewer: Participant, budget: Int, now: MediaTime) {
        let slots = viewer.video.slots
        let ranked = slots.map { slot in slot.assigned.map { rankedLayers(of: $0, now: now) } ?? [] }
        let demands = ranked.enumerated().map { index, layers in
            LayerAllocator.Demand(layers: allocatorLayers(layers, of: slots[index].assigned, now: now),
                                  maximumHeight: slots[index].maximumHeight, priority: index,
                                  current: layers.firstIndex { $0.layer == slots[index].layer && slots[index].assigned == slots[index].publisher },
                                  currentTemporalLayer: Self.currentTemporalLayer(of: slots[index]))
        }
        let chosen = LayerAllocator.allocateSteps(budget: budget, demands: demands)
        // A REMB is the client's estimate of what it receives, so it cannot grow past what it is
        // sent (aiortc's settled at 126–147 kbit/s on loopback with the 150 kbit/s layer): a
        // paused slot would never come back. Such a subscriber keeps at least the lowest layer.
        let neverPause = viewer.transport.estimatedBitrate == nil
        var changed = false
        for index in slots.indices {
            guard let publisher = slots[index].assigned, !ranked[index].isEmpty else { continue }
            let order = ranked[index].map(\.layer)
            // A paused slot resumes on the lowest step; going higher is an upgrade like any other.
            let paused = viewer.video.slots[index].pausedForBandwidth
            let lowest = LayerAllocator.lowestChoice(of: demands[index])
            let allocated = (chosen[index].flatMap { paused ? lowest : $0 } ?? (neverPause ? lowest : nil))
                .map { Self.policyStep($0, order: order) }
            let rank = { (step: Int) in Self.stepRank(step, order: order) }
            // Held at the slot's height cap rather than by the budget: a user's choice.
            let tallest = demands[index].tallestAllowed
            let capped = tallest < order.count - 1
                && chosen[index].map { $0.layer == tallest && $0.allTemporalLayers } == true
            switch viewer.video.slots[index].layerPolicy.decide(allocated: allocated, now: now,
                                                                forcedByBandwidth: !capped, rank: rank) {
            case .stay:
                continue
            case .move(let step):
                if moveSlot(index, of: viewer, publisher: publisher, to: step, now: now) { changed = true }
            case .pause:
                guard !viewer.video.slots[index].pausedForBandwidth else { continue }
                viewer.video.slots[index].pausedForBandwidth = true
                // Resuming waits for a keyframe, whatever layer it resumes on.
                viewer.video.slots[index].layer = -1
                viewer.video.statistics.layerSwitches &+= 1
                changed = true
            }
        }
        if changed { emitSlots(of: viewer.callId) }
        probeForPausedSlots(of: viewer, ranked: ranked, budget: budget, now: now)
    }

    static let layerSwitchRates = Recorder(label: "chorus_video_layer_switches_per_minute", aggregate: true)

    /// At a call's end, its layer switches per minute of known downlink (one sample per call
    /// that received video for at least 10 s): `/metrics` shows how often layers move.
    func recordLayerSwitches(of participant: Participant) {
        let seconds = participant.estimateSummary.samples
        guard !participant.video.slots.isEmpty, seconds >= 10 else { return }
        Self.layerSwitchRates.record(Double(participant.video.statistics.layerSwitches) * 60 / Double(seconds))
    }

    /// The first wait between probes for a paused slot, and the longest.
    static let pausedProbeBackoffNanoseconds: ClosedRange<UInt64> = 2_000_000_000...8_000_000_000

    /// A slot paused for bandwidth sends nothing, so the estimate cannot grow past what the
    /// audio carries: ask for a probe at what the lowest paused layer needs, with headroom, and
    /// the slot resumes once the probe shows the link carries it (and a link that opened wide
    /// is followed up exponentially, as at the start of a call). Each probe overfills a link
    /// that is still thin for a moment (and the audio queues behind it), so the probes back off:
    /// 2 s, 4 s, then 8 s apart while the slot stays paused.
    private func probeForPausedSlots(of viewer: Participant, ranked: [[(layer: Int, bitrate: Int, height: Int?)]],
                                     budget: Int, now: MediaTime) {
        // The whole lowest layer. Aiming at its base temporal layer alone (where the slot
        // resumes) was tried on 2026-11-26: in one fresh-clone run the paused viewer's audio
        // then lost 1.7 % in test_simulcast_layers (bar 1 %); not understood yet, so reverted.
        let needs = viewer.video.slots.indices.compactMap { index -> Int? in
            guard viewer.video.slots[index].pausedForBandwidth, ranked.indices.contains(index),
                  let lowest = ranked[index].first
            else { return nil }
            return lowest.bitrate
        }
        guard let need = needs.min() else {
            viewer.video.pausedProbe = nil
            return
        }
        let backoff = viewer.video.pausedProbe?.backoffNanoseconds ?? Self.pausedProbeBackoffNanoseconds.lowerBound
        if let last = viewer.video.pausedProbe?.at, now.nanoseconds(since: last) < backoff { return }
        viewer.video.pausedProbe = (now, viewer.video.pausedProbe == nil
            ? backoff : min(backoff * 2, Self.pausedProbeBackoffNanoseconds.upperBound))
        let target = Double(budget + Self.audioReserveBitsPerSecond + need) * LayerAllocator.upgradeHeadroom
        viewer.transport.requestProbe(bitrate: Int(target), probeFurther: true, now: now)
    }
}
