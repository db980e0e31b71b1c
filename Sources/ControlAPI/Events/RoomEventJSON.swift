import ChorusCore
import Foundation
import Rooms

/// One value of an event's JSON object (events are small, flat objects with a few nested
/// records): the tree `RoomEventRecord.json()` and the call record's server statistics are
/// written from.
indirect enum EventField: Sendable, Equatable, Encodable {
    case string(String)
    case int(Int)
    case bool(Bool)
    case object([String: EventField])
    case array([EventField])
    case null

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }

    /// Sorted keys, so the same event always reads the same.
    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

extension RoomEventRecord {
    /// `data:` of the SSE frame: the event's fields plus its `type` and `time`.
    func json() -> String {
        var object = event.fields
        object["type"] = .string(name.rawValue)
        object["time"] = .string(ISO8601DateFormatter().string(from: time))
        return EventField.object(object).json
    }
}

extension RoomEvent {
    /// The event's JSON fields, as the published `RoomEvent` schema names them (`type` and
    /// `time` aside): what the event stream sends and the webhooks carry.
    var fields: [String: EventField] {
        switch self {
        case .participantJoined(let who, let displayName, let headers):
            var fields = who.fields
            if let displayName { fields["displayName"] = .string(displayName) }
            if !headers.isEmpty { fields["headers"] = .object(headers.mapValues { .string($0) }) }
            return fields
        case .participantEstablished(let who, let profile):
            return who.fields.merging(["srtpProfile": .string(profile)]) { $1 }
        case .participantEnded(let end):
            return end.fields
        case .participantICERestarted(let who), .audioMuted(let who), .audioUnmuted(let who), .videoResumed(let who),
             .talkingStarted(let who), .talkingStopped(let who):
            return who.fields
        case .videoPaused(let who, let reason):
            return who.fields.merging(["reason": .string(reason.rawValue)]) { $1 }
        case .videoSlots(let who, let slots):
            return who.fields.merging(["slots": .array(slots.map { .object($0.fields) })]) { $1 }
        case .speakerDominant(let who):
            return who?.fields ?? ["callId": .null]
        case .roomClosed(let roomId):
            return ["roomId": .string(roomId.rawValue)]
        case .callQualityWarning(let warning):
            return warning.fields
        case .callQualityRecovered(let recovery):
            return recovery.fields
        case .recordingFailed(let id, let error):
            return ["recordingId": .string(id), "error": .string(error)]
        }
    }
}

extension EventMember {
    var fields: [String: EventField] {
        var fields: [String: EventField] = ["callId": .string(callId.rawValue)]
        if let userId { fields["userId"] = .string(userId.rawValue) }
        return fields
    }
}

extension SlotAssignmentEvent {
    var fields: [String: EventField] {
        var entry: [String: EventField] = ["slot": .int(slot), "mid": .string(mid)]
        if let publisher {
            entry["publisherCallId"] = .string(publisher.callId.rawValue)
            if let user = publisher.userId { entry["publisherUserId"] = .string(user.rawValue) }
            if let layer { entry["layer"] = .int(layer) }
            if let rid { entry["rid"] = .string(rid) }
        } else {
            entry["publisherCallId"] = .null
        }
        if pausedForBandwidth { entry["paused"] = .string("bandwidth") }
        return entry
    }
}

extension QualityWarningEvent {
    var fields: [String: EventField] {
        var fields = member?.fields ?? [:]
        fields["warning"] = .string(warning)
        if let direction { fields["direction"] = .string(direction) }
        fields["value"] = .int(value)
        fields["threshold"] = .int(threshold)
        if let mos { fields["mos"] = .string(String(format: "%.2f", mos)) }
        return fields
    }
}

extension QualityRecoveryEvent {
    var fields: [String: EventField] {
        var fields = member?.fields ?? [:]
        fields["warning"] = .string(warning)
        if let direction { fields["direction"] = .string(direction) }
        fields["durationSeconds"] = .int(durationSeconds)
        return fields
    }
}
