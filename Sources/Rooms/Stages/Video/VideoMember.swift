import ChorusCore
import RTP
import VideoForwarder

/// One member's video in the video router: its camera as a publisher (packet cache, loss
/// detection, keyframe throttle, bandwidth estimates from its subscribers) and the video slots
/// it receives others in, sent through its connection. Made by `VideoRouter.add` from the
/// member's `MemberMedia`.
///
/// A class, confined to the router (the room's queue): the per-packet path mutates its caches
/// and rewriters in place; a struct read out of the table would share their storage and make
/// the next write copy it.
final class VideoMember {
    let callId: CallID
    let userId: UserID
    let connection: any MemberConnection
    /// Connected: it may be shown and may be sent video.
    var established = false
    /// Paused at its own request (`PATCH {"videoPaused": true}`): not shown.
    var paused = false
    var publisher: VideoPublisher?
    var slots: [VideoSlot]
    /// Publishers this member asked to see first (`PATCH {"pinned": [...]}`), in order.
    var pinned: [CallID] = []
    var statistics = VideoStatistics()
    /// When its slots' layers were last chosen (`VideoRouter+Layers`).
    var layersAllocatedAt: MediaTime?
    /// How much of its NACKs is answered (`RetransmissionLimiter`).
    var retransmissions = RetransmissionLimiter()

    init(callId: CallID, userId: UserID, media: MemberMedia, connection: any MemberConnection) {
        self.callId = callId
        self.userId = userId
        self.connection = connection
        publisher = media.camera.map(VideoPublisher.init)
        slots = media.slots.map(VideoSlot.init)
    }

    /// Every stream the room sends this member's slots on (and their RTX), for its goodbye.
    var sentSources: [SSRC] {
        slots.flatMap { slot in [slot.rewriter.ssrc] + (slot.rtx.map { [$0.ssrc] } ?? []) }
    }
}

/// A member's camera, as the router sees it: one stream, or up to three simulcast
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

    init(camera: MemberMedia.Camera) {
        codec = camera.codec
        payloadType = camera.payloadType
        rtxPayloadType = camera.rtxPayloadType
        clockRate = camera.clockRate
        if camera.isSimulcast {
            simulcast = SimulcastStreams(
                rids: camera.simulcastRIDs, rtpStreamIDExtension: camera.rtpStreamIDExtension,
                repairedRTPStreamIDExtension: camera.repairedRTPStreamIDExtension)
            layers = camera.simulcastRIDs.map { _ in PublisherLayer() }
        } else {
            layers = [PublisherLayer(ssrc: camera.ssrc, rtxSSRC: camera.rtxSSRC)]
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

    init(_ slot: MemberMedia.Slot) {
        mid = slot.mid
        codec = slot.codec
        rewriter = SlotStreamRewriter(
            ssrc: slot.ssrc, payloadType: slot.payloadType, initialSequenceNumber: UInt16.random(in: 0...UInt16.max),
            initialTimestamp: UInt32.random(in: 0...UInt32.max))
        rtx = slot.rtx
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
