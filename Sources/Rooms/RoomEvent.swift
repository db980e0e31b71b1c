import Foundation

/// One value in an event's payload (events are small, flat JSON objects).
public indirect enum EventField: Sendable, Equatable, Encodable {
    case string(String)
    case int(Int)
    case bool(Bool)
    case strings([String])
    case object([String: EventField])
    case array([EventField])
    case null

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .strings(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }
}

/// Every event type a room emits, by its wire name. One list, so that the published schema
/// (`RoomEvent` in openapi.yaml) can be checked against it by a test rather than by review.
public enum RoomEventName: String, CaseIterable, Sendable {
    case participantJoined = "participant.joined"
    case participantEstablished = "participant.established"
    case participantICERestarted = "participant.iceRestarted"
    case participantEnded = "participant.ended"
    case audioMuted = "audio.muted"
    case audioUnmuted = "audio.unmuted"
    case videoPaused = "video.paused"
    case videoResumed = "video.resumed"
    case videoSlots = "video.slots"
    case talkingStarted = "talking.started"
    case talkingStopped = "talking.stopped"
    case speakerDominant = "speaker.dominant"
    case roomClosed = "room.closed"
    case callQualityWarning = "call.quality.warning"
    case callQualityRecovered = "call.quality.recovered"
    case recordingFailed = "recording.failed"
}

/// Something that happened in a room, as the events stream (SSE) and the call-record writer
/// see it: `participant.joined`, `participant.established`, `participant.ended`,
/// `room.closed`, and later the media events. `id` increases by one per room, so a client can
/// resume with `Last-Event-ID`.
public struct RoomEvent: Sendable, Equatable {
    public let id: UInt64
    public let name: String
    public let time: Date
    public let fields: [String: EventField]

    /// `data:` of the SSE frame: the fields plus the event's name and time.
    public func json() -> String {
        var object = fields
        object["type"] = .string(name)
        object["time"] = .string(ISO8601DateFormatter().string(from: time))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(object)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

/// The last `capacity` events of a room, for `Last-Event-ID` resumption, and the live
/// subscribers. Owned by the `Room` actor.
struct RoomEventLog {
    let capacity: Int
    private(set) var events: [RoomEvent] = []
    /// Ids start from the wall clock (microseconds) rather than 1, so they keep increasing when
    /// a room is closed and opened again or the server restarts: a client's Last-Event-ID
    /// from before then never hides the new room's events.
    private var nextID = UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
    private var subscribers: [UInt64: AsyncStream<RoomEvent>.Continuation] = [:]
    private var nextSubscriber: UInt64 = 0

    init(capacity: Int = 1024) {
        self.capacity = capacity
    }

    mutating func append(_ name: String, _ fields: [String: EventField], at time: Date) -> RoomEvent {
        let event = RoomEvent(id: nextID, name: name, time: time, fields: fields)
        nextID += 1
        events.append(event)
        if events.count > capacity { events.removeFirst(events.count - capacity) }
        for continuation in subscribers.values { continuation.yield(event) }
        return event
    }

    /// Events after `lastID` still in the buffer (all buffered events when nil).
    func events(after lastID: UInt64?) -> [RoomEvent] {
        guard let lastID else { return events }
        return events.filter { $0.id > lastID }
    }

    mutating func subscribe(_ continuation: AsyncStream<RoomEvent>.Continuation) -> UInt64 {
        nextSubscriber += 1
        subscribers[nextSubscriber] = continuation
        return nextSubscriber
    }

    mutating func unsubscribe(_ id: UInt64) {
        subscribers.removeValue(forKey: id)
    }

    mutating func finishAll() {
        for continuation in subscribers.values { continuation.finish() }
        subscribers.removeAll()
    }
}
