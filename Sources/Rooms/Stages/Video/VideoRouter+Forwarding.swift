import ChorusCore
import RTP
import VideoForwarder

/// The router's per-packet path: a camera's packet assigned to its layer, cached, measured and
/// written into every slot that shows that layer (switching slots on keyframes).
extension VideoRouter {
    /// A video RTP packet from `callId`'s camera (already decrypted): assigned to its layer,
    /// cached for NACKs, checked for loss, measured, and forwarded into every slot that shows
    /// this publisher's layer; a keyframe completes the slot switches waiting for it. RTX
    /// retransmissions (answers to our NACKs) are unwrapped first and handled as the packet
    /// they repair.
    mutating func receive(_ rtp: RTPPacket, from callId: CallID, now: MediaTime, budgets: VideoBudgets,
                          into output: inout RoomOutput) {
        // The publisher's small fields only: a copy of the whole state held across the cache
        // insert below would share the cache's storage and make that insert copy it.
        guard let participant = byCallId[callId], let publisher = participant.publisher?.summary
        else { return }
        guard let (layer, packet, header, repair) = cameraPacket(rtp, of: participant, publisher: publisher, now: now),
              participant.publisher?.layers.indices.contains(layer) == true
        else { return }
        // An RTX packet whose original already came is not a repair: browsers probe their
        // uplink by resending recent packets over RTX, and forwarding those would send every
        // viewer the publisher's probes (measured: the lowest layer arriving at 3–4 times its
        // rate while Chromium ramps up).
        if repair, participant.publisher?.layers[layer].cache.packet(header.sequenceNumber, now: now) != nil {
            participant.statistics.redundantRepairs &+= 1
            return
        }
        participant.statistics.packetsReceived &+= 1
        participant.statistics.bytesReceived &+= UInt64(rtp.bytes.count)
        let wasShowable = publisher.isShowable
        participant.publisher?.lastPacketAt = now
        participant.publisher?.layers[layer].lastPacketAt = now
        participant.publisher?.layers[layer].loss.received(header.sequenceNumber, now: now)
        guard header.payloadRange.count > 0 else { return }  // padding-only probes are not video
        participant.publisher?.layers[layer].cache.insert(packet, sequenceNumber: header.sequenceNumber, arrival: now)
        participant.publisher?.layers[layer].bitrate.add(bytes: packet.count, now: now)
        let vp8 = publisher.codec == .vp8 ? try? VP8PayloadDescriptor(parsing: packet[header.payloadRange]) : nil
        participant.publisher?.layers[layer].temporalBitrates.add(
            bytes: packet.count, temporalLayer: vp8?.temporalLayerID, now: now)
        if participant.paused { return }
        if publisher.inactive {
            participant.publisher?.inactive = false
            output.emit(.videoResumed(eventMember(callId)), at: now)
        }
        if !wasShowable || publisher.inactive { reassignSlots(now: now, budgets: budgets, into: &output) }
        forward(packet, header: header, vp8: vp8, from: callId, layer: layer, codec: publisher.codec,
                clockRate: publisher.clockRate, now: now, into: &output)
    }

    /// The layer a camera packet belongs to and the packet itself (an RTX packet as the one it
    /// repairs), or nil to drop it: a payload type not negotiated, an SSRC that is not the
    /// camera's, a simulcast packet `SimulcastStreams` refuses (counted there).
    private func cameraPacket(_ rtp: RTPPacket, of participant: VideoMember, publisher: VideoPublisher.Summary,
                              now: MediaTime) -> (Int, [UInt8], RTPHeader, repair: Bool)? {
        // The transport's packet spans its whole (decrypted) array, so this shares its storage.
        let bytes = Array(rtp.bytes)
        let header = rtp.header
        if publisher.isSimulcast {
            switch participant.publisher?.simulcast?.received(
                ssrc: header.ssrc, extensions: rtp.headerExtensions, bytes: bytes.count, now: now) {
            case .media(let layer)?:
                guard header.payloadType.rawValue == publisher.payloadType,
                      participant.publisher?.layers.indices.contains(layer) == true
                else { return nil }
                if participant.publisher?.layers[layer].ssrc != header.ssrc {
                    participant.publisher?.layers[layer].ssrc = header.ssrc
                }
                return (layer, bytes, header, false)
            case .repair(let layer)?:
                guard let primary = participant.publisher?.simulcast?.mediaSSRC(layer: layer),
                      let original = RTXPacket.unwrap(bytes, header: header, primary: primary,
                                                    payloadType: publisher.payloadType)
                else { return nil }
                return (layer, original.packet, original.header, true)
            default:
                return nil
            }
        }
        guard let only = participant.publisher?.layers.first else { return nil }
        if let rtxType = publisher.rtxPayloadType, header.payloadType.rawValue == rtxType {
            guard let primary = only.ssrc,
                  let original = RTXPacket.unwrap(bytes, header: header, primary: primary, payloadType: publisher.payloadType)
            else { return nil }
            return (0, original.packet, original.header, true)
        }
        guard header.payloadType.rawValue == publisher.payloadType else { return nil }
        // Without a=ssrc lines the first media packet names the camera's SSRC.
        guard let ssrc = only.ssrc else {
            participant.publisher?.layers[0].ssrc = header.ssrc
            return (0, bytes, header, false)
        }
        return header.ssrc == ssrc ? (0, bytes, header, false) : nil
    }

    /// Writes one publisher packet into each slot that shows (or is switching to) its layer. A
    /// slot moves to a new publisher, or to another layer of the same one, on a keyframe of the
    /// layer it waits for; a slot paused for bandwidth gets nothing.
    private mutating func forward(
        _ packet: [UInt8], header: RTPHeader, vp8: VP8PayloadDescriptor?, from callId: CallID, layer: Int,
        codec: VideoCodec, clockRate: UInt32, now: MediaTime, into output: inout RoomOutput
    ) {
        let payload = packet[header.payloadRange]
        let keyframe = KeyframeDetector.isKeyframeStart(codec: codec, payload: payload, vp8: vp8)
        if keyframe {
            byCallId[callId]?.publisher?.layers[layer].keyframes.keyframeReceived()
            if let height = vp8?.payloadHeader(payload: payload)?.height {
                byCallId[callId]?.publisher?.layers[layer].height = Int(height)
            }
        }
        for (subscriber, index) in slotViewers[callId] ?? [] {
            // One lookup, then in place through the (class) participant: only small fields are
            // read, since a copy of the slot would share its rewriter's history and make the
            // rewrite copy it.
            guard let viewer = byCallId[subscriber], viewer.established,
                  viewer.slots.indices.contains(index), viewer.slots[index].codec == codec,
                  !viewer.slots[index].pausedForBandwidth
            else { continue }
            let switching = viewer.slots[index].pending == callId
                || (viewer.slots[index].publisher == callId && viewer.slots[index].layer != layer)
            if switching {
                guard keyframe, viewer.slots[index].targetLayer == layer else { continue }
                let temporal = viewer.slots[index].targetTemporalLayer
                viewer.slots[index].rewriter.targetTemporalLayer = temporal
                viewer.slots[index].rewriter.switchSource(
                    to: header.ssrc, at: header, vp8: vp8, now: now, clockRate: clockRate)
                if viewer.slots[index].pending == callId {
                    viewer.slots[index].publisher = callId
                    viewer.slots[index].pending = nil
                    viewer.slots[index].layerPolicy = LayerSwitchPolicy()
                    viewer.statistics.slotSwitches &+= 1
                } else {
                    viewer.statistics.layerSwitches &+= 1
                }
                viewer.slots[index].layer = layer
                viewer.slots[index].layerPolicy.switched(
                    to: LayerSwitchPolicy.step(layer: layer, temporalLayer: temporal), now: now)
            }
            guard viewer.slots[index].publisher == callId, viewer.slots[index].layer == layer,
                  viewer.slots[index].rewriter.rewrite(
                      packet, header: header, vp8: vp8, now: now, into: &scratch) != nil,
                  viewer.connection.sendRTP(scratch, now: now, transmits: &output.transmits)
            else { continue }
            viewer.statistics.packetsForwarded &+= 1
            viewer.statistics.bytesForwarded &+= UInt64(scratch.count)
        }
    }
}
