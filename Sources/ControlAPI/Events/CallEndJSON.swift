import ChorusCore
import Foundation
import Rooms

extension CallEnd {
    /// `participant.ended`'s fields: who, why, whether it was established, and what the server
    /// measured (a call lost with its node has only the node's ID).
    var fields: [String: EventField] {
        var fields = member.fields
        fields["endCause"] = .string(cause.rawValue)
        fields["established"] = .bool(established)
        if let media { fields["media"] = .object(media.fields) }
        if let audio { fields["audio"] = .object(audio.mapValues { .int($0) }) }
        if let video { fields["video"] = .object(video.mapValues { .int($0) }) }
        if let slots { fields["slots"] = .array(slots.map { .object($0.recordFields) }) }
        if let downlink { fields["downlink"] = .object(downlink.fields) }
        if let quality { fields["quality"] = .object(quality.fields) }
        if let nodeId { fields["nodeId"] = .string(nodeId) }
        return fields
    }

    /// The call record's server statistics: the connection's counters at the top level, the
    /// audio receive figures under "audio", the video counters under "video", the downlink and
    /// slots by name, the quality summary (MOS, each warning's count and seconds).
    var serverStatistics: String {
        var merged = media?.fields ?? [:]
        if let audio { merged["audio"] = .object(audio.mapValues { .int($0) }) }
        if let video { merged["video"] = .object(video.mapValues { .int($0) }) }
        if let downlink { merged["downlink"] = .object(downlink.fields) }
        if let slots { merged["slots"] = .array(slots.map { .object($0.recordFields) }) }
        if let quality { merged["quality"] = .object(quality.fields) }
        return EventField.object(merged).json
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

extension SlotView {
    /// A slot as its call ended: who it showed, on which layer.
    var recordFields: [String: EventField] {
        var entry: [String: EventField] = ["mid": .string(mid)]
        if let publisherCallId { entry["publisherCallId"] = .string(publisherCallId) }
        if let layer { entry["layer"] = .int(layer) }
        if let rid { entry["rid"] = .string(rid) }
        if let paused { entry["paused"] = .string(paused) }
        if let maxHeight { entry["maxHeight"] = .int(maxHeight) }
        return entry
    }
}

extension DownlinkSummary {
    /// The last estimate and its source, and the mean, lowest and highest of the samples.
    var fields: [String: EventField] {
        var fields: [String: EventField] = ["bitrate": .int(bitrate), "source": .string(source)]
        if let mean = samples.mean {
            fields["meanBitrate"] = .int(mean)
            fields["minimumBitrate"] = .int(samples.minimum)
            fields["maximumBitrate"] = .int(samples.maximum)
        }
        if let rtt = roundTripTimeMilliseconds { fields["roundTripTimeMilliseconds"] = .int(rtt) }
        return fields
    }
}

extension CallQualitySummary {
    var fields: [String: EventField] {
        var fields: [String: EventField] = [:]
        if let mosMin, let mosMean {
            fields["mosMin"] = .string(String(format: "%.2f", mosMin))
            fields["mosMean"] = .string(String(format: "%.2f", mosMean))
        }
        fields["warnings"] = .object(warnings.mapValues { .object(["count": .int($0.count), "seconds": .int($0.seconds)]) })
        return fields
    }
}
