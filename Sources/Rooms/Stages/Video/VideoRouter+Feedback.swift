import ChorusCore
import RTCP
import RTP
import VideoForwarder

/// A subscriber's feedback about its slots: keyframe requests go to the publishers (throttled),
/// NACKs are answered from the publishers' caches (as RTX when the slot has it, within the
/// subscriber's budget), and its downlink estimate is shared among the publishers it shows.
extension VideoRouter {
    /// One feedback packet from a subscriber, decoded once by the room core.
    mutating func receiveFeedback(_ packet: RTCPPacket, from callId: CallID, now: MediaTime, budgets: VideoBudgets,
                                  into output: inout RoomOutput) {
        switch packet {
        case .pictureLossIndication(let pli):
            keyframeRequested(forSlotSSRC: pli.mediaSSRC, by: callId, now: now, into: &output)
        case .fullIntraRequest(let fir):
            for entry in fir.entries { keyframeRequested(forSlotSSRC: entry.ssrc, by: callId, now: now, into: &output) }
        case .genericNACK(let nack):
            answerNACK(nack, from: callId, now: now, budgets: budgets, into: &output)
        default:
            return
        }
    }

    private func slotIndex(ofSSRC ssrc: SSRC, subscriber: CallID) -> Int? {
        byCallId[subscriber]?.slots.firstIndex { $0.rewriter.ssrc == ssrc }
    }

    /// A subscriber asks for a keyframe of a slot: of the layer the slot shows, or waits for.
    private func keyframeRequested(forSlotSSRC ssrc: SSRC, by subscriber: CallID, now: MediaTime,
                                   into output: inout RoomOutput) {
        guard let index = slotIndex(ofSSRC: ssrc, subscriber: subscriber),
              let slot = byCallId[subscriber]?.slots[index], let publisher = slot.assigned
        else { return }
        byCallId[subscriber]?.statistics.keyframeRequestsReceived &+= 1
        requestKeyframe(from: publisher, layer: slot.targetLayer, now: now, into: &output)
    }

    /// Asks a publisher for a keyframe of one layer (PLI on that layer's SSRC), at most once per
    /// throttle interval; a throttled request is sent by the video tick.
    func requestKeyframe(from publisher: CallID, layer: Int, now: MediaTime, into output: inout RoomOutput) {
        guard byCallId[publisher]?.publisher?.layers.indices.contains(layer) == true,
              byCallId[publisher]?.publisher?.layers[layer].keyframes.request(now: now) == true
        else { return }
        sendPLI(to: publisher, layer: layer, into: &output)
    }

    func sendPLI(to publisher: CallID, layer: Int, into output: inout RoomOutput) {
        guard let participant = byCallId[publisher], let layers = participant.publisher?.layers,
              layers.indices.contains(layer), let media = layers[layer].ssrc
        else { return }
        let sender = participant.connection.rtcpSSRC
        guard let compound = RTXPacket.feedbackCompound(sender: sender, { out throws(RTCPSerializationError) in
            try PictureLossIndication(senderSSRC: sender, mediaSSRC: media).serialize(into: &out)
        }) else { return }
        if participant.connection.sendRTCP(compound, transmits: &output.transmits) {
            participant.statistics.keyframeRequestsSent &+= 1
        }
    }

    /// Answers a subscriber's NACK from the publishers' caches, as RTX when the slot has it.
    private mutating func answerNACK(_ nack: GenericNACK, from subscriber: CallID, now: MediaTime, budgets: VideoBudgets,
                                     into output: inout RoomOutput) {
        guard let viewer = byCallId[subscriber], let index = slotIndex(ofSSRC: nack.mediaSSRC, subscriber: subscriber)
        else { return }
        let slot = viewer.slots[index]
        for item in nack.items {
            for sequence in item {
                viewer.statistics.nacksReceived &+= 1
                guard let (mapping, sourceSequence) = slot.rewriter.mapping(forSlotSequence: sequence),
                      let (publisher, layer) = publisherOf(mapping.source, likely: slot.publisher),
                      let cached = byCallId[publisher]?.publisher?.layers[layer].cache.packet(sourceSequence, now: now),
                      let header = try? RTPHeader(parsing: cached)
                else { continue }
                let budget = budgets(subscriber)?.measured
                guard viewer.retransmissions.allow(
                    slot: index, sequenceNumber: sequence, bytes: cached.count, budget: budget, now: now)
                else { continue }
                let payload = cached[header.payloadRange]
                let vp8 = slot.codec == .vp8 ? try? VP8PayloadDescriptor(parsing: payload) : nil
                slot.rewriter.rewriteAgain(cached, header: header, vp8: vp8, mapping: mapping, into: &scratch)
                if let rtx = slot.rtx {
                    RTXPacket.wrap(&scratch, ssrc: rtx.ssrc, payloadType: rtx.payloadType,
                                   sequenceNumber: viewer.slots[index].rtxSequence)
                    viewer.slots[index].rtxSequence &+= 1
                }
                guard viewer.connection.sendRTP(scratch, now: now, transmits: &output.transmits) else { continue }
                viewer.statistics.nacksAnswered &+= 1
                viewer.statistics.retransmissions &+= 1
            }
        }
    }

    /// The participant whose camera is `ssrc`: almost always the slot's current publisher, so
    /// that is checked before scanning the room.
    private func publisherOf(_ ssrc: SSRC, likely: CallID?) -> (CallID, Int)? {
        if let likely, let layer = byCallId[likely]?.publisher?.layer(of: ssrc) { return (likely, layer) }
        for member in members {
            if let layer = member.publisher?.layer(of: ssrc) { return (member.callId, layer) }
        }
        return nil
    }

    /// A subscriber's estimate of its downlink (its REMB, or the server's own from its
    /// transport-cc feedback) covers everything it receives: each slot it fills gets an equal share,
    /// recorded against the slot's publisher.
    func receiveEstimate(_ bitrate: UInt64, from subscriber: CallID, now: MediaTime) {
        guard let slots = byCallId[subscriber]?.slots else { return }
        let shown = slots.compactMap(\.publisher)
        guard !shown.isEmpty else { return }
        let share = bitrate / UInt64(shown.count)
        for publisher in shown { byCallId[publisher]?.publisher?.estimates[subscriber] = (share, now) }
    }
}
