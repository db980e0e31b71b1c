import ChorusCore
import RTCP
import RTP
import VideoForwarder

/// The router's 20 ms tick: keyframe requests (throttled, and repeated for slots still waiting
/// on one), NACKs for packets lost on the way in, the inactivity check, the estimates passed on
/// to publishers (once a second), and each subscriber's layer choice (once a second).
extension VideoRouter {
    /// Per tick: throttled keyframe requests (repeated for slots still waiting), NACKs for
    /// packets lost on the way in, the inactivity check, and the bandwidth estimates passed on
    /// to publishers (once a second).
    /// Returns, for each subscriber whose layers were chosen this tick, what its paused slots
    /// need (for the bandwidth stage's probes).
    mutating func tick(now: MediaTime, budgets: VideoBudgets, into output: inout RoomOutput) -> [PausedSlotNeed] {
        repeatKeyframeRequestsForWaitingSlots(now: now, into: &output)
        var slotsChanged = false
        for member in members {
            guard let publisher = member.publisher else { continue }
            let callId = member.callId
            for layer in publisher.layers.indices {
                if member.publisher?.layers[layer].keyframes.poll(now: now) == true {
                    sendPLI(to: callId, layer: layer, into: &output)
                }
                let lost = member.publisher?.layers[layer].loss.due(now: now) ?? []
                if !lost.isEmpty { sendNACK(lost, to: member, layer: layer, into: &output) }
            }
            if !publisher.inactive, let last = publisher.lastPacketAt,
               now.nanoseconds(since: last) >= Self.inactivityNanoseconds {
                member.publisher?.inactive = true
                if !member.paused { output.emit(.videoPaused(eventMember(callId), reason: .inactive), at: now) }
                slotsChanged = true
            }
            passEstimate(to: member, now: now, into: &output)
        }
        if slotsChanged { reassignSlots(now: now, budgets: budgets, into: &output) }
        return allocateLayers(now: now, budgets: budgets, into: &output)
    }

    /// Asks again for each layer some slot is switching to (a new publisher, or another layer of
    /// the same one), once its last request is a second old. The scan over the slot index runs
    /// once a second, not every tick: the repeat interval is a second anyway.
    private mutating func repeatKeyframeRequestsForWaitingSlots(now: MediaTime, into output: inout RoomOutput) {
        if let last = lastKeyframeRepeatScan, now.nanoseconds(since: last) < Self.keyframeRepeatNanoseconds { return }
        lastKeyframeRepeatScan = now
        for (publisher, viewers) in slotViewers {
            var awaited = Set<Int>()
            for viewer in viewers {
                guard let slots = byCallId[viewer.subscriber]?.slots, slots.indices.contains(viewer.slot)
                else { continue }
                let slot = slots[viewer.slot]
                guard !slot.pausedForBandwidth else { continue }
                if slot.pending == publisher || (slot.publisher == publisher && slot.layer != slot.targetLayer) {
                    awaited.insert(slot.targetLayer)
                }
            }
            for layer in awaited {
                guard let layers = byCallId[publisher]?.publisher?.layers, layers.indices.contains(layer),
                      let last = layers[layer].keyframes.lastSent,
                      now.nanoseconds(since: last) >= Self.keyframeRepeatNanoseconds
                else { continue }
                requestKeyframe(from: publisher, layer: layer, now: now, into: &output)
            }
        }
    }

    private func sendNACK(_ lost: [UInt16], to participant: VideoMember, layer: Int, into output: inout RoomOutput) {
        guard let layers = participant.publisher?.layers, layers.indices.contains(layer), let media = layers[layer].ssrc
        else { return }
        let sender = participant.connection.rtcpSSRC
        guard let compound = RTXPacket.feedbackCompound(sender: sender, { out throws(RTCPSerializationError) in
            try GenericNACK(senderSSRC: sender, mediaSSRC: media, lostSequenceNumbers: lost).serialize(into: &out)
        }) else { return }
        if participant.connection.sendRTCP(compound, transmits: &output.transmits) {
            participant.statistics.nacksSent &+= UInt64(lost.count)
        }
    }

    /// Once a second, to a single-stream publisher: the highest fresh estimate of its
    /// subscribers, bounded, as a REMB. Its encoder then sends no more than its best-placed
    /// viewer can take (nothing is gained by more), and never less: a subscriber whose link
    /// cannot carry the stream has that slot paused (`VideoRouter+Layers`) instead of lowering the
    /// picture for everyone, as mediasoup, LiveKit and Jitsi do. (The lowest share, sent before,
    /// let one thin viewer pull every other viewer's picture down to its link.)
    private func passEstimate(to participant: VideoMember, now: MediaTime, into output: inout RoomOutput) {
        // A simulcast publisher sends its layers as its own uplink allows, and each subscriber
        // gets the layer its link carries: no subscriber's link lowers what the others see. So
        // does one whose stream has VP8 temporal layers: a thin subscriber gets fewer of them.
        guard let state = participant.publisher, state.simulcast == nil, let media = state.layers.first?.ssrc
        else { return }
        if let last = state.lastEstimateSentAt, now.nanoseconds(since: last) < 1_000_000_000 { return }
        if state.layers.contains(where: { $0.temporalBitrates.hasTemporalLayers(now: now) }) { return }
        let fresh = state.estimates.values.filter { now.nanoseconds(since: $0.at) < 5_000_000_000 }.map(\.bitrate)
        guard let highest = fresh.max() else { return }
        participant.publisher?.lastEstimateSentAt = now
        let bitrate = min(max(highest, Self.estimateBounds.lowerBound), Self.estimateBounds.upperBound)
        let sender = participant.connection.rtcpSSRC
        guard let compound = RTXPacket.feedbackCompound(sender: sender, { out throws(RTCPSerializationError) in
            try ReceiverEstimatedMaximumBitrate(senderSSRC: sender, bitrate: bitrate, ssrcs: RTCPItemList([media]))
                .serialize(into: &out)
        }) else { return }
        participant.connection.sendRTCP(compound, transmits: &output.transmits)
    }
}
