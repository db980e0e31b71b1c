import AudioMixer
import ChorusCore
import Foundation
import CongestionControl
import PeerTransport
import VideoForwarder

/// A participant as the room keeps it: identity, call state, its transport, audio and video.
///
/// A class, confined to its room core (the room's queue): the per-packet and per-tick paths read and mutate it
/// through `participants[id]`, and as a struct every read copied (retained) each of its fields
/// and every nested mutation risked a copy-on-write of its jitter buffer (measured at 1,000
/// participants). It is never shared outside the room; snapshots are values.
final class Participant {
    let callId: CallID
    let userId: UserID
    let displayName: String?
    let joinedAt: Date
    var establishedAt: Date?
    var state: ParticipantState = .progressing
    var audioMuted = false
    var videoPaused = false
    let transport: PeerTransport
    /// Our current ICE ufrag (a new one after each ICE restart), by which its STUN is routed.
    var ufrag: String
    /// What its answer was built from, to answer an ICE restart.
    var answer: AnswerSource
    var boundAddresses: Set<TransportAddress> = []
    var srtpProfile: String?
    var audio: ParticipantAudio
    /// Its place in the room's mixer (set when it joins): the tick reaches it by slot.
    var mixerHandle: RoomAudioMixer<CallID>.Handle?
    var video: ParticipantVideo
    /// A bandwidth probe toward this participant under way (`RoomCore+Probing`).
    var probe: RoomCore.ProbeInFlight?
    /// When its downlink estimate last went to `/metrics`.
    var estimateSampledAt: MediaTime?
    /// Its downlink estimate over the call, one sample a second, for the call record.
    var estimateSummary = EstimateSummary()
    /// Its call quality, judged once a second (`RoomCore+Quality`).
    var quality = CallQuality()
    /// When its last audio packet arrived.
    var lastAudioAt: MediaTime?

    init(callId: CallID, userId: UserID, displayName: String?, joinedAt: Date, transport: PeerTransport,
         ufrag: String, audio: ParticipantAudio, video: ParticipantVideo, answer: AnswerSource) {
        self.answer = answer
        self.callId = callId
        self.userId = userId
        self.displayName = displayName
        self.joinedAt = joinedAt
        self.transport = transport
        self.ufrag = ufrag
        self.audio = audio
        self.video = video
    }

    /// The SSRCs the participant declared for what it sends (microphone, camera, its RTX), by
    /// which its packets from a new address find it (NAT rebinding).
    var receivedSources: [SSRC] {
        let analysis = answer.analysis
        return [analysis.audio.ssrc, analysis.camera?.primarySSRC, analysis.camera?.rtxSSRC].compactMap { $0 }
    }

    /// Every stream we send this participant (the mix, each video slot and its RTX), for the
    /// BYE that says goodbye.
    var sentSources: [SSRC] {
        [transport.configuration.rtcpSSRC] + video.slots.flatMap { slot in
            [slot.rewriter.ssrc] + (slot.rtx.map { [$0.ssrc] } ?? [])
        }
    }

    func snapshot(endCause: EndCause? = nil) -> ParticipantSnapshot {
        ParticipantSnapshot(
            callId: callId, userId: userId, displayName: displayName, state: state, endCause: endCause,
            joinedAt: joinedAt, establishedAt: establishedAt, audioMuted: audioMuted, videoPaused: videoPaused,
            counters: transport.counters, audioStatistics: audio.statistics, videoStatistics: video.statistics.fields,
            pinned: video.pinned, srtpProfile: srtpProfile, downlink: downlink, slots: slotViews,
            publishedLayers: publishedLayers)
    }

    /// Its camera's layers for the API, measured at the time of the last packet.
    var publishedLayers: [PublishedLayerView] {
        guard let publisher = video.publisher else { return [] }
        return publisher.layers.enumerated().map { index, layer in
            let rids = publisher.simulcast?.rids ?? []
            let bitrate = layer.lastPacketAt.map { layer.bitrate.bitsPerSecond(now: $0) } ?? 0
            let temporal = layer.lastPacketAt.map { layer.temporalBitrates.cumulativeBitsPerSecond(now: $0) } ?? []
            return PublishedLayerView(rid: rids.indices.contains(index) ? rids[index] : nil,
                                      bitrate: Int(clamping: bitrate), height: layer.height,
                                      temporalBitrates: temporal.isEmpty ? nil : temporal)
        }
    }

    /// Its slots for the API; the rooms' core fills in each publisher's RIDs.
    var slotViews: [SlotView] {
        video.slots.map { slot in
            SlotView(mid: slot.mid, publisherCallId: slot.assigned?.rawValue,
                     layer: slot.assigned == nil ? nil : slot.targetLayer, rid: slot.targetRID,
                     temporalLayer: slot.assigned == nil || slot.targetTemporalLayer >= TemporalLayerFilter.allLayers
                         ? nil : Int(slot.targetTemporalLayer),
                     paused: slot.pausedForBandwidth ? "bandwidth" : nil, maxHeight: slot.maximumHeight)
        }
    }

    /// Its downlink over the call for the call record: the last estimate, its source and the
    /// mean, lowest and highest of the once-a-second samples (nil if nothing was known).
    var downlinkRecord: EventField? {
        guard let last = downlink else { return nil }
        var fields: [String: EventField] = ["bitrate": .int(last.bitrate), "source": .string(last.source)]
        if let mean = estimateSummary.mean {
            fields["meanBitrate"] = .int(mean)
            fields["minimumBitrate"] = .int(estimateSummary.minimum)
            fields["maximumBitrate"] = .int(estimateSummary.maximum)
        }
        if let rtt = last.roundTripTimeMilliseconds { fields["roundTripTimeMilliseconds"] = .int(rtt) }
        return .object(fields)
    }

    /// Its slots as they ended, for the call record: who each showed, on which layer.
    var slotsRecord: EventField {
        .array(slotViews.map { view in
            var entry: [String: EventField] = ["mid": .string(view.mid)]
            if let publisher = view.publisherCallId { entry["publisherCallId"] = .string(publisher) }
            if let layer = view.layer { entry["layer"] = .int(layer) }
            if let rid = view.rid { entry["rid"] = .string(rid) }
            if let paused = view.paused { entry["paused"] = .string(paused) }
            if let cap = view.maxHeight { entry["maxHeight"] = .int(cap) }
            return .object(entry)
        })
    }

    /// The transport's estimate when transport-cc runs, else the participant's last REMB.
    var downlink: DownlinkEstimate? {
        let rtt = transport.roundTripNanoseconds.map { Int(clamping: $0 / 1_000_000) }
        if let estimate = transport.bandwidthEstimate {
            return DownlinkEstimate(
                bitrate: estimate.targetBitrate, source: "transportCC", delayBasedBitrate: estimate.delayBasedBitrate,
                lossBasedBitrate: estimate.lossBasedBitrate, acknowledgedBitrate: estimate.acknowledgedBitrate,
                lossFraction: estimate.lossFraction, roundTripTimeMilliseconds: rtt)
        }
        return video.lastREMB.map { DownlinkEstimate(bitrate: Int(clamping: $0), source: "remb", roundTripTimeMilliseconds: rtt) }
    }
}

extension MediaCounters {
    /// The counters as event fields (the call record stores them as server statistics).
    var fields: [String: EventField] {
        [
            "packetsReceived": .int(Int(clamping: packetsReceived)), "bytesReceived": .int(Int(clamping: bytesReceived)),
            "packetsSent": .int(Int(clamping: packetsSent)), "bytesSent": .int(Int(clamping: bytesSent)),
            "rtcpReceived": .int(Int(clamping: rtcpReceived)), "rtcpSent": .int(Int(clamping: rtcpSent)),
            "packetsDropped": .int(Int(clamping: packetsDropped)), "stunReceived": .int(Int(clamping: stunReceived)),
            "sendFailures": .int(Int(clamping: sendFailures)), "pathChanges": .int(Int(clamping: pathChanges)),
            "transportFeedbackSent": .int(Int(clamping: transportFeedbackSent)),
            "transportFeedbackReceived": .int(Int(clamping: transportFeedbackReceived)),
        ]
    }
}
