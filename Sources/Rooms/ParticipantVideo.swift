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

    init(analysis: OfferAnalysis, slotStreams: [OutgoingStream]) {
        publisher = analysis.camera.flatMap(VideoPublisher.init)
        slots = zip(analysis.slots, slotStreams).compactMap { section, stream in
            VideoSlot(section: section, stream: stream)
        }
    }
}

/// A participant's camera, as the forwarder sees it.
struct VideoPublisher {
    let codec: VideoCodec
    let payloadType: UInt8
    let rtxPayloadType: UInt8?
    let clockRate: UInt32
    /// The camera's SSRC: announced in the offer, or learnt from its first packet.
    var ssrc: SSRC?
    var rtxSSRC: SSRC?
    var cache = PacketCache()
    var loss = LossDetector()
    var keyframes = KeyframeRequestThrottle()
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
        ssrc = camera.primarySSRC
        rtxSSRC = camera.rtxSSRC
    }

    /// Sending, and seen recently enough to be shown.
    var isShowable: Bool { ssrc != nil && lastPacketAt != nil && !inactive }

    /// The fields the per-packet path reads, without the cache and detectors.
    struct Summary {
        let codec: VideoCodec
        let payloadType: UInt8
        let rtxPayloadType: UInt8?
        let clockRate: UInt32
        let ssrc: SSRC?
        let inactive: Bool
        let isShowable: Bool
    }

    var summary: Summary {
        Summary(codec: codec, payloadType: payloadType, rtxPayloadType: rtxPayloadType, clockRate: clockRate,
                ssrc: ssrc, inactive: inactive, isShowable: isShowable)
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
