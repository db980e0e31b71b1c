import ChorusCore
import CongestionControl
import RTP
import VideoForwarder

/// What the router shows of a member (the API's participant view, the call record), and the
/// probes it writes for the bandwidth stage on a subscriber's RTX stream.
extension VideoRouter {
    /// Its slots: who each shows, which layer, and whether it is paused for bandwidth.
    func slotViews(of callId: CallID) -> [SlotView] {
        guard let member = byCallId[callId] else { return [] }
        return member.slots.map { slot in
            SlotView(mid: slot.mid, publisherCallId: slot.assigned?.rawValue,
                     layer: slot.assigned == nil ? nil : slot.targetLayer, rid: slot.targetRID,
                     temporalLayer: slot.assigned == nil || slot.targetTemporalLayer >= TemporalLayerFilter.allLayers
                         ? nil : Int(slot.targetTemporalLayer),
                     paused: slot.pausedForBandwidth ? "bandwidth" : nil, maxHeight: slot.maximumHeight)
        }
    }

    /// Its camera's layers, measured at the time of their last packet.
    func publishedLayers(of callId: CallID) -> [PublishedLayerView] {
        guard let publisher = byCallId[callId]?.publisher else { return [] }
        return publisher.layers.enumerated().map { index, layer in
            let rids = publisher.simulcast?.rids ?? []
            let bitrate = layer.lastPacketAt.map { layer.bitrate.bitsPerSecond(now: $0) } ?? 0
            let temporal = layer.lastPacketAt.map { layer.temporalBitrates.cumulativeBitsPerSecond(now: $0) } ?? []
            return PublishedLayerView(rid: rids.indices.contains(index) ? rids[index] : nil,
                                      bitrate: Int(clamping: bitrate), height: layer.height,
                                      temporalBitrates: temporal.isEmpty ? nil : temporal)
        }
    }

    /// Its video counters; empty for a member without video.
    func statistics(of callId: CallID) -> [String: Int] {
        (byCallId[callId]?.statistics ?? VideoStatistics()).fields
    }

    func pinned(by callId: CallID) -> [CallID] { byCallId[callId]?.pinned ?? [] }

    /// Its camera's last packet, when it shows it (not paused): what a frozen picture is judged by.
    func lastCameraPacket(of callId: CallID) -> MediaTime? {
        guard let member = byCallId[callId], !member.paused else { return nil }
        return member.publisher?.lastPacketAt
    }

    /// The streams its slots are sent on, for its goodbye.
    func sentSources(of callId: CallID) -> [SSRC] { byCallId[callId]?.sentSources ?? [] }

    /// Whether a subscriber's path can be probed: it has a slot with an RTX stream to pad
    /// (padding on a media stream would break its numbering).
    func canProbe(_ callId: CallID) -> Bool { byCallId[callId]?.slots.contains { $0.rtx != nil } ?? false }

    /// Padding per probe packet: the most RFC 3550 padding can say (255 bytes, with the count).
    static let probePaddingBytes = 255

    /// `packets` padding-only packets of a probe cluster on the subscriber's first RTX stream
    /// (RFC 4588 streams carry padding, which receivers count and drop); false when it has no
    /// such stream or the connection refused one.
    @discardableResult
    func sendProbe(to callId: CallID, cluster: ProbeCluster, packets: Int, now: MediaTime,
                   into output: inout RoomOutput) -> Bool {
        guard let member = byCallId[callId], let index = member.slots.firstIndex(where: { $0.rtx != nil }),
              let rtx = member.slots[index].rtx
        else { return false }
        let packetBytes = RTPHeader.fixedLength + Self.probePaddingBytes
        let timestamp = member.slots[index].rewriter.lastTimestamp
        for _ in 0..<max(packets, 0) {
            var packet: [UInt8] = []
            packet.reserveCapacity(packetBytes + 32)
            packet.append(0x80)
            packet.append(rtx.payloadType.rawValue)
            packet.append16(member.slots[index].rtxSequence)
            packet.append32(timestamp)
            packet.append32(rtx.ssrc.rawValue)
            RTPHeaderRewriter.appendPadding(count: Self.probePaddingBytes, to: &packet)
            member.slots[index].rtxSequence &+= 1
            guard member.connection.sendRTP(packet, reporting: nil, probeClusterID: cluster.id, now: now,
                                            transmits: &output.transmits)
            else { return false }
            member.statistics.probePacketsSent &+= 1
        }
        return true
    }

    /// Its layer switches per minute of known downlink, at its call's end, for `/metrics`.
    func layerSwitches(of callId: CallID) -> UInt64? {
        guard let member = byCallId[callId], !member.slots.isEmpty else { return nil }
        return member.statistics.layerSwitches
    }
}
