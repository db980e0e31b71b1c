import ChorusCore
import RTCP
import PeerTransport
import RTP
import VideoForwarder

extension RoomCore {
    /// A video RTP packet from `callId`'s camera (already decrypted): assigned to its layer,
    /// cached for NACKs, checked for loss, measured, and forwarded into every slot that shows
    /// this publisher's layer; a keyframe completes the slot switches waiting for it. RTX
    /// retransmissions (answers to our NACKs) are unwrapped first and handled as the packet
    /// they repair.
    func receiveVideo(_ rtp: RTPPacket, callId: CallID, now: MediaTime) {
        // The publisher's small fields only: a copy of the whole state held across the cache
        // insert below would share the cache's storage and make that insert copy it.
        guard let participant = participants[callId], let publisher = participant.video.publisher?.summary
        else { return }
        guard let (layer, packet, header, repair) = cameraPacket(rtp, of: participant, publisher: publisher, now: now),
              participant.video.publisher?.layers.indices.contains(layer) == true
        else { return }
        // An RTX packet whose original already came is not a repair: browsers probe their
        // uplink by resending recent packets over RTX, and forwarding those would send every
        // viewer the publisher's probes (measured: the lowest layer arriving at 3–4 times its
        // rate while Chromium ramps up).
        if repair, participant.video.publisher?.layers[layer].cache.packet(header.sequenceNumber, now: now) != nil {
            participant.video.statistics.redundantRepairs &+= 1
            return
        }
        participant.video.statistics.packetsReceived &+= 1
        participant.video.statistics.bytesReceived &+= UInt64(rtp.bytes.count)
        let wasShowable = publisher.isShowable
        participant.video.publisher?.lastPacketAt = now
        participant.video.publisher?.layers[layer].lastPacketAt = now
        participant.video.publisher?.layers[layer].loss.received(header.sequenceNumber, now: now)
        guard header.payloadRange.count > 0 else { return }  // padding-only probes are not video
        participant.video.publisher?.layers[layer].cache.insert(packet, sequenceNumber: header.sequenceNumber, arrival: now)
        participant.video.publisher?.layers[layer].bitrate.add(bytes: packet.count, now: now)
        let vp8 = publisher.codec == .vp8 ? try? VP8PayloadDescriptor(parsing: packet[header.payloadRange]) : nil
        participant.video.publisher?.layers[layer].temporalBitrates.add(
            bytes: packet.count, temporalLayer: vp8?.temporalLayerID, now: now)
        if participant.videoPaused { return }
        if publisher.inactive {
            participant.video.publisher?.inactive = false
            emit(.videoResumed, participantFields(callId))
        }
        if !wasShowable || publisher.inactive { reassignSlots(now: now) }
        forward(packet, header: header, vp8: vp8, from: callId, layer: layer, codec: publisher.codec,
                clockRate: publisher.clockRate, now: now)
    }

    /// The layer a camera packet belongs to and the packet itself (an RTX packet as the one it
    /// repairs), or nil to drop it: a payload type not negotiated, an SSRC that is not the
    /// camera's, a simulcast packet `SimulcastStreams` refuses (counted there).
    private func cameraPacket(_ rtp: RTPPacket, of participant: Participant, publisher: VideoPublisher.Summary,
                              now: MediaTime) -> (Int, [UInt8], RTPHeader, repair: Bool)? {
        // The transport's packet spans its whole (decrypted) array, so this shares its storage.
        let bytes = Array(rtp.bytes)
        let header = rtp.header
        if publisher.isSimulcast {
            switch participant.video.publisher?.simulcast?.received(
                ssrc: header.ssrc, extensions: rtp.headerExtensions, bytes: bytes.count, now: now) {
            case .media(let layer)?:
                guard header.payloadType.rawValue == publisher.payloadType,
                      participant.video.publisher?.layers.indices.contains(layer) == true
                else { return nil }
                if participant.video.publisher?.layers[layer].ssrc != header.ssrc {
                    participant.video.publisher?.layers[layer].ssrc = header.ssrc
                }
                return (layer, bytes, header, false)
            case .repair(let layer)?:
                guard let primary = participant.video.publisher?.simulcast?.mediaSSRC(layer: layer),
                      let original = Self.unwrapRTX(bytes, header: header, primary: primary,
                                                    payloadType: publisher.payloadType)
                else { return nil }
                return (layer, original.packet, original.header, true)
            default:
                return nil
            }
        }
        guard let only = participant.video.publisher?.layers.first else { return nil }
        if let rtxType = publisher.rtxPayloadType, header.payloadType.rawValue == rtxType {
            guard let primary = only.ssrc,
                  let original = Self.unwrapRTX(bytes, header: header, primary: primary, payloadType: publisher.payloadType)
            else { return nil }
            return (0, original.packet, original.header, true)
        }
        guard header.payloadType.rawValue == publisher.payloadType else { return nil }
        // Without a=ssrc lines the first media packet names the camera's SSRC.
        guard let ssrc = only.ssrc else {
            participant.video.publisher?.layers[0].ssrc = header.ssrc
            return (0, bytes, header, false)
        }
        return header.ssrc == ssrc ? (0, bytes, header, false) : nil
    }

    /// Writes one publisher packet into each slot that shows (or is switching to) its layer. A
    /// slot moves to a new publisher, or to another layer of the same one, on a keyframe of the
    /// layer it waits for; a slot paused for bandwidth gets nothing.
    private func forward(
        _ packet: [UInt8], header: RTPHeader, vp8: VP8PayloadDescriptor?, from callId: CallID, layer: Int,
        codec: VideoCodec, clockRate: UInt32, now: MediaTime
    ) {
        let payload = packet[header.payloadRange]
        let keyframe = KeyframeDetector.isKeyframeStart(codec: codec, payload: payload, vp8: vp8)
        if keyframe {
            participants[callId]?.video.publisher?.layers[layer].keyframes.keyframeReceived()
            if let height = vp8?.payloadHeader(payload: payload)?.height {
                participants[callId]?.video.publisher?.layers[layer].height = Int(height)
            }
        }
        for (subscriber, index) in slotViewers[callId] ?? [] {
            // One lookup, then in place through the (class) participant: only small fields are
            // read, since a copy of the slot would share its rewriter's history and make the
            // rewrite copy it.
            guard let viewer = participants[subscriber], viewer.state == .established,
                  viewer.video.slots.indices.contains(index), viewer.video.slots[index].codec == codec,
                  !viewer.video.slots[index].pausedForBandwidth
            else { continue }
            let switching = viewer.video.slots[index].pending == callId
                || (viewer.video.slots[index].publisher == callId && viewer.video.slots[index].layer != layer)
            if switching {
                guard keyframe, viewer.video.slots[index].targetLayer == layer else { continue }
                let temporal = viewer.video.slots[index].targetTemporalLayer
                viewer.video.slots[index].rewriter.targetTemporalLayer = temporal
                viewer.video.slots[index].rewriter.switchSource(
                    to: header.ssrc, at: header, vp8: vp8, now: now, clockRate: clockRate)
                if viewer.video.slots[index].pending == callId {
                    viewer.video.slots[index].publisher = callId
                    viewer.video.slots[index].pending = nil
                    viewer.video.slots[index].layerPolicy = LayerSwitchPolicy()
                    viewer.video.statistics.slotSwitches &+= 1
                } else {
                    viewer.video.statistics.layerSwitches &+= 1
                }
                viewer.video.slots[index].layer = layer
                viewer.video.slots[index].layerPolicy.switched(
                    to: LayerSwitchPolicy.step(layer: layer, temporalLayer: temporal), now: now)
            }
            guard viewer.video.slots[index].publisher == callId, viewer.video.slots[index].layer == layer,
                  viewer.video.slots[index].rewriter.rewrite(
                      packet, header: header, vp8: vp8, now: now, into: &videoScratch) != nil,
                  viewer.transport.sendRTP(videoScratch, now: now, transmits: &output.transmits)
            else { continue }
            viewer.video.statistics.packetsForwarded &+= 1
            viewer.video.statistics.bytesForwarded &+= UInt64(videoScratch.count)
        }
    }

    /// One feedback packet from a subscriber (about its slots): keyframe requests go to the
    /// publishers, NACKs are answered from the publishers' caches, REMB is recorded.
    func receiveVideoFeedback(_ packet: RTCPPacket, callId: CallID, now: MediaTime) {
        switch packet {
        case .pictureLossIndication(let pli):
            keyframeRequested(forSlotSSRC: pli.mediaSSRC, by: callId, now: now)
        case .fullIntraRequest(let fir):
            for entry in fir.entries { keyframeRequested(forSlotSSRC: entry.ssrc, by: callId, now: now) }
        case .genericNACK(let nack):
            answerNACK(nack, from: callId, now: now)
        case .receiverEstimatedMaximumBitrate(let remb):
            participants[callId]?.video.lastREMB = remb.bitrate
            recordEstimate(remb.bitrate, from: callId, now: now)
        case .transportFeedback(let feedback):
            // With transport-cc the subscriber sends no REMB: the server's own estimate of the
            // path toward it takes the REMB's place.
            guard let transport = participants[callId]?.transport else { return }
            transport.receivedTransportFeedback(feedback, now: now)
            if let estimate = transport.estimatedBitrate { recordEstimate(UInt64(max(estimate, 0)), from: callId, now: now) }
        case .goodbye:
            // Not a leave: Chromium sends BYE on replaceTrack, some clients on mute. Counted;
            // a call ends on DELETE, close_notify or consent expiry.
            RoomMetrics.goodbyeReceived()
        default:
            return
        }
    }

    private func slotIndex(ofSSRC ssrc: SSRC, subscriber: CallID) -> Int? {
        participants[subscriber]?.video.slots.firstIndex { $0.rewriter.ssrc == ssrc }
    }

    /// A subscriber asks for a keyframe of a slot: of the layer the slot shows, or waits for.
    private func keyframeRequested(forSlotSSRC ssrc: SSRC, by subscriber: CallID, now: MediaTime) {
        guard let index = slotIndex(ofSSRC: ssrc, subscriber: subscriber),
              let slot = participants[subscriber]?.video.slots[index], let publisher = slot.assigned
        else { return }
        participants[subscriber]?.video.statistics.keyframeRequestsReceived &+= 1
        requestKeyframe(from: publisher, layer: slot.targetLayer, now: now)
    }

    /// Asks a publisher for a keyframe of one layer (PLI on that layer's SSRC), at most once per
    /// throttle interval; a throttled request is sent by the video tick.
    func requestKeyframe(from publisher: CallID, layer: Int, now: MediaTime) {
        guard participants[publisher]?.video.publisher?.layers.indices.contains(layer) == true,
              participants[publisher]?.video.publisher?.layers[layer].keyframes.request(now: now) == true
        else { return }
        sendPLI(to: publisher, layer: layer)
    }

    func sendPLI(to publisher: CallID, layer: Int) {
        guard let participant = participants[publisher], let layers = participant.video.publisher?.layers,
              layers.indices.contains(layer), let media = layers[layer].ssrc
        else { return }
        let sender = participant.transport.configuration.rtcpSSRC
        guard let compound = Self.feedbackCompound(sender: sender, { out throws(RTCPSerializationError) in
            try PictureLossIndication(senderSSRC: sender, mediaSSRC: media).serialize(into: &out)
        }) else { return }
        if participant.transport.sendRTCP(compound, transmits: &output.transmits) {
            participants[publisher]?.video.statistics.keyframeRequestsSent &+= 1
        }
    }

    /// Answers a subscriber's NACK from the publishers' caches, as RTX when the slot has it.
    private func answerNACK(_ nack: GenericNACK, from subscriber: CallID, now: MediaTime) {
        guard let index = slotIndex(ofSSRC: nack.mediaSSRC, subscriber: subscriber),
              let slot = participants[subscriber]?.video.slots[index]
        else { return }
        for item in nack.items {
            for sequence in item {
                participants[subscriber]?.video.statistics.nacksReceived &+= 1
                guard let (mapping, sourceSequence) = slot.rewriter.mapping(forSlotSequence: sequence),
                      let (publisher, layer) = publisherOf(mapping.source, likely: slot.publisher),
                      let cached = participants[publisher]?.video.publisher?.layers[layer].cache
                          .packet(sourceSequence, now: now),
                      let header = try? RTPHeader(parsing: cached)
                else { continue }
                let budget = participants[subscriber].flatMap { measuredVideoBudget(of: $0) }
                guard participants[subscriber]?.video.retransmissions.allow(
                    slot: index, sequenceNumber: sequence, bytes: cached.count, budget: budget, now: now) == true
                else { continue }
                let payload = cached[header.payloadRange]
                let vp8 = slot.codec == .vp8 ? try? VP8PayloadDescriptor(parsing: payload) : nil
                slot.rewriter.rewriteAgain(cached, header: header, vp8: vp8, mapping: mapping, into: &videoScratch)
                if let rtx = slot.rtx {
                    Self.wrapRTX(&videoScratch, ssrc: rtx.ssrc, payloadType: rtx.payloadType,
                                 sequenceNumber: participants[subscriber]?.video.slots[index].rtxSequence ?? 0)
                    participants[subscriber]?.video.slots[index].rtxSequence &+= 1
                }
                guard participants[subscriber]?.transport.sendRTP(videoScratch, now: now, transmits: &output.transmits) == true
                else { continue }
                participants[subscriber]?.video.statistics.nacksAnswered &+= 1
                participants[subscriber]?.video.statistics.retransmissions &+= 1
            }
        }
    }

    /// The participant whose camera is `ssrc`: almost always the slot's current publisher, so
    /// that is checked before scanning the room.
    private func publisherOf(_ ssrc: SSRC, likely: CallID?) -> (CallID, Int)? {
        if let likely, let layer = participants[likely]?.video.publisher?.layer(of: ssrc) { return (likely, layer) }
        for id in joinOrder {
            if let layer = participants[id]?.video.publisher?.layer(of: ssrc) { return (id, layer) }
        }
        return nil
    }

    /// A subscriber's REMB covers everything it receives: each slot it fills gets an equal share,
    /// recorded against the slot's publisher.
    private func recordEstimate(_ bitrate: UInt64, from subscriber: CallID, now: MediaTime) {
        guard let slots = participants[subscriber]?.video.slots else { return }
        let shown = slots.compactMap(\.publisher)
        guard !shown.isEmpty else { return }
        let share = bitrate / UInt64(shown.count)
        for publisher in shown { participants[publisher]?.video.publisher?.estimates[subscriber] = (share, now) }
    }
}
