import ChorusCore
import RTP
import SDP
import VideoForwarder

/// One participant's video in the room: its camera as a publisher (packet cache, loss
/// detection, keyframe throttle, bandwidth estimates from its subscribers) and the video slots
/// it receives others in. Owned by the `Participant`, used only on the room's queue.
struct ParticipantVideo {
    var publisher: VideoPublisher?
    var slots: [VideoSlot]
    /// Publishers this participant asked to see first (`PATCH {"pinned": [...]}`), in order.
    var pinned: [CallID] = []
    var statistics = VideoStatistics()
    /// The last REMB this participant sent (bit/s): its own estimate of the path from the
    /// server, the downlink estimate of a client without transport-cc.
    var lastREMB: UInt64?
    /// When its slots' layers were last chosen (`RoomCore+Layers`).
    var layersAllocatedAt: MediaTime?
    /// How much of its NACKs is answered (`RetransmissionLimiter`).
    var retransmissions = RetransmissionLimiter()
    /// The last probe asked for a slot paused for bandwidth, and the wait before the next one
    /// (doubling while the link stays short: each probe overfills a thin link for a moment).
    var pausedProbe: (at: MediaTime, backoffNanoseconds: UInt64)?

    init(analysis: OfferAnalysis, slotStreams: [OutgoingStream]) {
        publisher = analysis.camera.flatMap(VideoPublisher.init)
        slots = zip(analysis.slots, slotStreams).compactMap { section, stream in
            VideoSlot(section: section, stream: stream)
        }
    }
}

/// A participant's camera, as the forwarder sees it: one stream, or up to three simulcast
/// layers (RFC 8853), each with its own SSRC, RTX, cache, loss detector and keyframe throttle.
struct VideoPublisher {
    let codec: VideoCodec
    let payloadType: UInt8
    let rtxPayloadType: UInt8?
    let clockRate: UInt32
    /// The streams it sends: one, or one per simulcast layer (index = `a=simulcast` position).
    var layers: [PublisherLayer]
    /// SSRC → layer, learnt from the RID header extensions; nil without simulcast.
    var simulcast: SimulcastStreams?
    var lastPacketAt: MediaTime?
    /// Reported paused because it stopped sending (`video.paused`, reason `inactive`).
    var inactive = false
    /// Latest per-stream bandwidth estimate (REMB) of each subscriber showing it, bit/s.
    var estimates: [CallID: (bitrate: UInt64, at: MediaTime)] = [:]
    var lastEstimateSentAt: MediaTime?

    init?(camera: CameraSection) {
        guard let codec = VideoCodec(camera.codec.name) else { return nil }
        self.codec = codec
        payloadType = camera.codec.payloadType.rawValue
        rtxPayloadType = camera.codec.rtxPayloadType?.rawValue
        clockRate = camera.codec.clockRate
        if camera.isSimulcast {
            simulcast = SimulcastStreams(
                rids: camera.simulcastLayers.map(\.rid),
                rtpStreamIDExtension: camera.rtpStreamIDExtension.flatMap(UInt8.init(exactly:)),
                repairedRTPStreamIDExtension: camera.repairedRTPStreamIDExtension.flatMap(UInt8.init(exactly:)))
            layers = camera.simulcastLayers.map { _ in PublisherLayer() }
        } else {
            layers = [PublisherLayer(ssrc: camera.primarySSRC, rtxSSRC: camera.rtxSSRC)]
        }
    }

    /// Sending, and seen recently enough to be shown.
    var isShowable: Bool { lastPacketAt != nil && !inactive && layers.contains { $0.ssrc != nil } }

    /// The layer sending `ssrc`, if any.
    func layer(of ssrc: SSRC) -> Int? { layers.firstIndex { $0.ssrc == ssrc } }

    /// The fields the per-packet path reads, without the caches and detectors.
    struct Summary {
        let codec: VideoCodec
        let payloadType: UInt8
        let rtxPayloadType: UInt8?
        let clockRate: UInt32
        let inactive: Bool
        let isShowable: Bool
        let isSimulcast: Bool
    }

    var summary: Summary {
        Summary(codec: codec, payloadType: payloadType, rtxPayloadType: rtxPayloadType, clockRate: clockRate,
                inactive: inactive, isShowable: isShowable, isSimulcast: simulcast != nil)
    }
}

/// One stream a publisher sends: its SSRC (announced, learnt from the first packet, or from its
/// RID), its RTX SSRC, what the NACK path needs, and its bitrate as it arrives.
struct PublisherLayer {
    var ssrc: SSRC?
    var rtxSSRC: SSRC?
    var cache = PacketCache()
    var loss = LossDetector()
    var keyframes = KeyframeRequestThrottle()
    var lastPacketAt: MediaTime?
    var bitrate = BitrateWindow()
    /// Its rate per target VP8 temporal layer (TID ≤ 0, ≤ 1, …).
    var temporalBitrates = TemporalLayerBitrates()
    /// The picture height of its last VP8 keyframe: how layers are ranked (a publisher's
    /// layer order follows its offer, and bitrates cross while its encoder ramps up).
    var height: Int?

    init(ssrc: SSRC? = nil, rtxSSRC: SSRC? = nil) {
        self.ssrc = ssrc
        self.rtxSSRC = rtxSSRC
    }
}

/// One of a subscriber's video slots: its m-line, its outgoing stream and who fills it.
struct VideoSlot {
    let mid: String
    let codec: VideoCodec
    var rewriter: SlotStreamRewriter
    /// RTX stream of the slot (RFC 4588) when the subscriber negotiated it.
    let rtx: (ssrc: SSRC, payloadType: PayloadType)?
    var rtxSequence = UInt16.random(in: 0...UInt16.max)
    /// The publisher forwarded now.
    var publisher: CallID?
    /// The publisher assigned next: forwarding switches on its keyframe.
    var pending: CallID?
    /// The publisher's layer forwarded now, and the one to switch to on its next keyframe
    /// (also the layer a pending publisher starts with).
    var layer = 0
    var targetLayer = 0
    /// The highest VP8 temporal layer to forward of `targetLayer` once the slot shows it (the
    /// rewriter's `targetTemporalLayer` is the one in force); `allLayers` forwards them all.
    var targetTemporalLayer = TemporalLayerFilter.allLayers
    /// When layers move (`LayerSwitchPolicy`), and whether the subscriber's downlink left
    /// this slot nothing (forwarding stops; `video.slots` says `bandwidth`).
    var layerPolicy = LayerSwitchPolicy()
    var pausedForBandwidth = false
    /// The RID of `targetLayer` with simulcast, kept for the API (set when the layer is chosen).
    var targetRID: String?
    /// The tallest picture the subscriber wants in this slot (`PATCH {"slots": [...]}`, e.g.
    /// its tile's height): layers above it are not forwarded. nil: no cap.
    var maximumHeight: Int?

    init?(section: VideoSection, stream: OutgoingStream) {
        guard let codec = VideoCodec(section.codec.name) else { return nil }
        mid = section.mid
        self.codec = codec
        rewriter = SlotStreamRewriter(
            ssrc: stream.ssrc, payloadType: section.codec.payloadType,
            initialSequenceNumber: UInt16.random(in: 0...UInt16.max),
            initialTimestamp: UInt32.random(in: 0...UInt32.max))
        if let rtxSSRC = stream.rtxSSRC, let rtxType = section.codec.rtxPayloadType {
            rtx = (rtxSSRC, rtxType)
        } else {
            rtx = nil
        }
    }

    /// Who the slot shows, as far as the subscriber is told: the assigned publisher.
    var assigned: CallID? { pending ?? publisher }
}

/// Per-call video counters, live in the participant's API view and stored in the call record.
struct VideoStatistics {
    var packetsReceived: UInt64 = 0
    var bytesReceived: UInt64 = 0
    var packetsForwarded: UInt64 = 0
    var bytesForwarded: UInt64 = 0
    var keyframeRequestsReceived: UInt64 = 0
    var keyframeRequestsSent: UInt64 = 0
    var nacksReceived: UInt64 = 0
    var nacksAnswered: UInt64 = 0
    var nacksSent: UInt64 = 0
    var retransmissions: UInt64 = 0
    var slotSwitches: UInt64 = 0
    /// Moves between a publisher's simulcast layers (or to and from a bandwidth pause).
    var layerSwitches: UInt64 = 0
    /// RTX packets from this publisher whose original had already arrived (its own bandwidth
    /// probes): dropped, not forwarded.
    var redundantRepairs: UInt64 = 0
    /// RTX padding packets sent to probe the path toward this subscriber.
    var probePacketsSent: UInt64 = 0

    var fields: [String: Int] {
        [
            "packetsReceived": Int(clamping: packetsReceived), "bytesReceived": Int(clamping: bytesReceived),
            "packetsForwarded": Int(clamping: packetsForwarded), "bytesForwarded": Int(clamping: bytesForwarded),
            "keyframeRequestsReceived": Int(clamping: keyframeRequestsReceived),
            "keyframeRequestsSent": Int(clamping: keyframeRequestsSent),
            "nacksReceived": Int(clamping: nacksReceived), "nacksAnswered": Int(clamping: nacksAnswered),
            "nacksSent": Int(clamping: nacksSent), "retransmissions": Int(clamping: retransmissions),
            "slotSwitches": Int(clamping: slotSwitches), "probePacketsSent": Int(clamping: probePacketsSent),
            "layerSwitches": Int(clamping: layerSwitches), "redundantRepairs": Int(clamping: redundantRepairs),
        ]
    }
}

extension VideoCodec {
    init?(_ name: VideoCodecName) {
        switch name {
        case .vp8: self = .vp8
        case .h264: self = .h264
        }
    }
}
