import ChorusCore
import RTCP
import RTP
import VideoForwarder

extension RoomCore {
    /// A publisher that sends nothing for this long is reported paused (reason `inactive`).
    static let videoInactivityNanoseconds: UInt64 = 2_000_000_000
    /// Bounds of the bandwidth passed to publishers: what a subscriber asks, within reason.
    static let estimateBounds: ClosedRange<UInt64> = 100_000...4_000_000

    /// Recomputes every subscriber's slots (a publisher came, went, paused or resumed; a pin
    /// list or the dominant speaker changed). A slot whose publisher changes keeps forwarding
    /// the old one until the new one's keyframe, which is requested now; the subscriber is told
    /// with a `video.slots` event.
    func reassignSlots(now: MediaTime) {
        // No viewer has a slot (an audio-only room): nothing to assign. One pass over the
        // video members (none in an audio-only room), where the full recomputation below costs
        // hash lookups per participant on every join, leave and dominant-speaker change:
        // quadratic over a big room's join ramp.
        guard videoMembers.contains(where: { !$0.video.slots.isEmpty }) else {
            slotViewers.removeAll(keepingCapacity: true)
            return
        }
        let publishers = joinOrder.filter { id in
            guard let participant = participants[id], participant.state == .established, !participant.videoPaused
            else { return false }
            return participant.video.publisher?.isShowable ?? false
        }
        for subscriber in joinOrder {
            guard let video = participants[subscriber]?.video, !video.slots.isEmpty,
                  participants[subscriber]?.state == .established
            else { continue }
            // Each camera only in a slot of its own codec (a viewer's slots may differ: VP8 and H.264).
            let wanted = SlotAssignment.assign(
                slotKinds: video.slots.map(\.codec), subscriber: subscriber, publishers: publishers,
                kind: { participants[$0]?.video.publisher?.codec }, pinned: video.pinned,
                recentSpeakers: recentSpeakers, current: video.slots.map(\.assigned))
            var changed = false
            for (index, target) in wanted.enumerated() where video.slots[index].assigned != target {
                changed = true
                assign(target, toSlot: index, of: subscriber, now: now)
            }
            if changed { emitSlots(of: subscriber) }
        }
        indexViewers()
    }

    /// Rebuilds `slotViewers` from every subscriber's slots.
    private func indexViewers() {
        slotViewers.removeAll(keepingCapacity: true)
        for subscriber in joinOrder {
            guard let slots = participants[subscriber]?.video.slots else { continue }
            for (index, slot) in slots.enumerated() {
                if let publisher = slot.publisher { slotViewers[publisher, default: []].append((subscriber, index)) }
                if let pending = slot.pending, pending != slot.publisher {
                    slotViewers[pending, default: []].append((subscriber, index))
                }
            }
        }
    }

    private func assign(_ publisher: CallID?, toSlot index: Int, of subscriber: CallID, now: MediaTime) {
        guard let publisher else {
            participants[subscriber]?.video.slots[index].publisher = nil
            participants[subscriber]?.video.slots[index].pending = nil
            participants[subscriber]?.video.slots[index].rewriter.clearSource()
            return
        }
        if participants[subscriber]?.video.slots[index].publisher == publisher {
            participants[subscriber]?.video.slots[index].pending = nil  // back to the one it shows
            return
        }
        let layer = initialLayer(of: publisher, for: subscriber, slot: index, now: now)
        participants[subscriber]?.video.slots[index].pending = publisher
        participants[subscriber]?.video.slots[index].targetLayer = layer
        participants[subscriber]?.video.slots[index].targetTemporalLayer = TemporalLayerFilter.allLayers
        participants[subscriber]?.video.slots[index].targetRID = rid(of: publisher, layer: layer)
        requestKeyframe(from: publisher, layer: layer, now: now)
    }

    /// `video.slots`: the subscriber's whole slot list, one entry per slot in m-line order.
    func emitSlots(of subscriber: CallID) {
        guard let slots = participants[subscriber]?.video.slots else { return }
        var fields = participantFields(subscriber)
        fields["slots"] = .array(slots.enumerated().map { index, slot in
            var entry: [String: EventField] = ["slot": .int(index), "mid": .string(slot.mid)]
            if let publisher = slot.assigned {
                entry["publisherCallId"] = .string(publisher.rawValue)
                if let user = participants[publisher]?.userId { entry["publisherUserId"] = .string(user.rawValue) }
                // The layer it shows or moves to: its RID with simulcast, else 0.
                entry["layer"] = .int(slot.targetLayer)
                if let rid = rid(of: publisher, layer: slot.targetLayer) { entry["rid"] = .string(rid) }
            } else {
                entry["publisherCallId"] = .null
            }
            // Nothing is forwarded while the subscriber's downlink cannot carry even the lowest layer.
            if slot.pausedForBandwidth { entry["paused"] = .string("bandwidth") }
            return .object(entry)
        })
        emit(.videoSlots, fields)
    }

    /// The dominant speaker changed: it moves to the front of the recent-speakers list that
    /// ranks publishers for slots.
    func noteDominantSpeaker(_ callId: CallID, now: MediaTime) {
        recentSpeakers.removeAll { $0 == callId }
        recentSpeakers.insert(callId, at: 0)
        if recentSpeakers.count > 32 { recentSpeakers.removeLast() }
        reassignSlots(now: now)
    }

    /// Sets a subscriber's pinned publishers (unknown IDs are kept: they may join later).
    func setPinned(_ pinned: [CallID], for subscriber: CallID, now: MediaTime) {
        var unique: [CallID] = []
        for id in pinned where id != subscriber && !unique.contains(id) { unique.append(id) }
        participants[subscriber]?.video.pinned = unique
        reassignSlots(now: now)
    }

    /// How long a slot waits for its new publisher's keyframe before asking again: a PLI can
    /// be lost, and publishers that make keyframes only when asked (Chromium, aiortc) would
    /// otherwise leave the slot on its old picture, or empty, until the next one.
    static let keyframeRepeatNanoseconds: UInt64 = 1_000_000_000

    /// Per tick: throttled keyframe requests (repeated for slots still waiting), NACKs for
    /// packets lost on the way in, the inactivity check, and the bandwidth estimates passed on
    /// to publishers (once a second).
    func videoTick(now: MediaTime) {
        repeatKeyframeRequestsForWaitingSlots(now: now)
        var slotsChanged = false
        for member in videoMembers {
            guard let publisher = member.video.publisher else { continue }
            let callId = member.callId
            for layer in publisher.layers.indices {
                if participants[callId]?.video.publisher?.layers[layer].keyframes.poll(now: now) == true {
                    sendPLI(to: callId, layer: layer)
                }
                let lost = participants[callId]?.video.publisher?.layers[layer].loss.due(now: now) ?? []
                if !lost.isEmpty { sendNACK(lost, to: callId, layer: layer) }
            }
            if !publisher.inactive, let last = publisher.lastPacketAt,
               now.nanoseconds(since: last) >= Self.videoInactivityNanoseconds {
                participants[callId]?.video.publisher?.inactive = true
                var fields = participantFields(callId)
                fields["reason"] = .string("inactive")
                if participants[callId]?.videoPaused == false { emit(.videoPaused, fields) }
                slotsChanged = true
            }
            passEstimate(to: callId, now: now)
        }
        if slotsChanged { reassignSlots(now: now) }
        allocateLayers(now: now)
        sendProbes(now: now)
    }

    /// Asks again for each layer some slot is switching to (a new publisher, or another layer of
    /// the same one), once its last request is a second old. The scan over the slot index runs
    /// once a second, not every tick: the repeat interval is a second anyway.
    private func repeatKeyframeRequestsForWaitingSlots(now: MediaTime) {
        if let last = lastKeyframeRepeatScan, now.nanoseconds(since: last) < Self.keyframeRepeatNanoseconds { return }
        lastKeyframeRepeatScan = now
        for (publisher, viewers) in slotViewers {
            var awaited = Set<Int>()
            for viewer in viewers {
                guard let slots = participants[viewer.subscriber]?.video.slots, slots.indices.contains(viewer.slot)
                else { continue }
                let slot = slots[viewer.slot]
                guard !slot.pausedForBandwidth else { continue }
                if slot.pending == publisher || (slot.publisher == publisher && slot.layer != slot.targetLayer) {
                    awaited.insert(slot.targetLayer)
                }
            }
            for layer in awaited {
                guard let layers = participants[publisher]?.video.publisher?.layers, layers.indices.contains(layer),
                      let last = layers[layer].keyframes.lastSent,
                      now.nanoseconds(since: last) >= Self.keyframeRepeatNanoseconds
                else { continue }
                requestKeyframe(from: publisher, layer: layer, now: now)
            }
        }
    }

    private func sendNACK(_ lost: [UInt16], to publisher: CallID, layer: Int) {
        guard let participant = participants[publisher], let layers = participant.video.publisher?.layers,
              layers.indices.contains(layer), let media = layers[layer].ssrc
        else { return }
        let sender = participant.transport.configuration.rtcpSSRC
        guard let compound = Self.feedbackCompound(sender: sender, { out throws(RTCPSerializationError) in
            try GenericNACK(senderSSRC: sender, mediaSSRC: media, lostSequenceNumbers: lost).serialize(into: &out)
        }) else { return }
        if participant.transport.sendRTCP(compound, transmits: &output.transmits) {
            participants[publisher]?.video.statistics.nacksSent &+= UInt64(lost.count)
        }
    }

    /// Once a second, to a single-stream publisher: the highest fresh estimate of its
    /// subscribers, bounded, as a REMB. Its encoder then sends no more than its best-placed
    /// viewer can take (nothing is gained by more), and never less: a subscriber whose link
    /// cannot carry the stream has that slot paused (`RoomCore+Layers`) instead of lowering the
    /// picture for everyone, as mediasoup, LiveKit and Jitsi do. (The lowest share, sent before,
    /// let one thin viewer pull every other viewer's picture down to its link.)
    private func passEstimate(to publisher: CallID, now: MediaTime) {
        // A simulcast publisher sends its layers as its own uplink allows, and each subscriber
        // gets the layer its link carries: no subscriber's link lowers what the others see. So
        // does one whose stream has VP8 temporal layers: a thin subscriber gets fewer of them.
        guard let state = participants[publisher]?.video.publisher, state.simulcast == nil,
              let media = state.layers.first?.ssrc
        else { return }
        if let last = state.lastEstimateSentAt, now.nanoseconds(since: last) < 1_000_000_000 { return }
        if state.layers.contains(where: { $0.temporalBitrates.hasTemporalLayers(now: now) }) { return }
        let fresh = state.estimates.values.filter { now.nanoseconds(since: $0.at) < 5_000_000_000 }.map(\.bitrate)
        guard let highest = fresh.max(), let participant = participants[publisher] else { return }
        participants[publisher]?.video.publisher?.lastEstimateSentAt = now
        let bitrate = min(max(highest, Self.estimateBounds.lowerBound), Self.estimateBounds.upperBound)
        let sender = participant.transport.configuration.rtcpSSRC
        guard let compound = Self.feedbackCompound(sender: sender, { out throws(RTCPSerializationError) in
            try ReceiverEstimatedMaximumBitrate(senderSSRC: sender, bitrate: bitrate, ssrcs: RTCPItemList([media]))
                .serialize(into: &out)
        }) else { return }
        participant.transport.sendRTCP(compound, transmits: &output.transmits)
    }

    /// A feedback message behind an empty receiver report: a compound packet any receiver
    /// accepts, reduced-size or not (RFC 3550 §6.1, RFC 5506).
    static func feedbackCompound(
        sender: SSRC, _ body: (inout [UInt8]) throws(RTCPSerializationError) -> Void
    ) -> [UInt8]? {
        var out: [UInt8] = []
        do {
            try ReceiverReport(ssrc: sender, reportBlocks: RTCPItemList([])).serialize(into: &out)
            try body(&out)
        } catch {
            return nil
        }
        return out
    }

    /// RFC 4588 §4: the RTX payload is the original sequence number then the original payload;
    /// the header takes the RTX stream's SSRC, payload type and sequence number.
    static func wrapRTX(_ packet: inout [UInt8], ssrc: SSRC, payloadType: PayloadType, sequenceNumber: UInt16) {
        guard let header = try? RTPHeader(parsing: packet) else { return }
        let original = header.sequenceNumber
        RTPHeaderRewriter.setSSRC(ssrc, in: &packet)
        RTPHeaderRewriter.setPayloadType(payloadType, in: &packet)
        RTPHeaderRewriter.setSequenceNumber(sequenceNumber, in: &packet)
        packet.insert(contentsOf: [UInt8(truncatingIfNeeded: original >> 8), UInt8(truncatingIfNeeded: original)],
                      at: header.payloadRange.lowerBound)
    }

    /// The packet an RTX retransmission repairs: the original sequence number from the first
    /// two payload bytes, the primary SSRC and payload type; nil when malformed.
    static func unwrapRTX(_ packet: [UInt8], header: RTPHeader, primary: SSRC, payloadType: UInt8)
        -> (packet: [UInt8], header: RTPHeader)?
    {
        let payload = header.payloadRange
        guard payload.count > 2, let type = PayloadType(payloadType) else { return nil }
        let original = packet.uint16(at: payload.lowerBound)
        var rebuilt = Array(packet[0..<payload.lowerBound])
        rebuilt[0] &= 0xDF  // the padding, if any, is not copied
        rebuilt.append(contentsOf: packet[(payload.lowerBound + 2)..<payload.upperBound])
        RTPHeaderRewriter.setSSRC(primary, in: &rebuilt)
        RTPHeaderRewriter.setPayloadType(type, in: &rebuilt)
        RTPHeaderRewriter.setSequenceNumber(original, in: &rebuilt)
        guard let header = try? RTPHeader(parsing: rebuilt) else { return nil }
        return (rebuilt, header)
    }
}
