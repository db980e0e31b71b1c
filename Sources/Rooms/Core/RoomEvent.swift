import ChorusCore
import Foundation
import PeerTransport

/// Something that happened in a room, typed: what the stages and the core say, what the event
/// stream (SSE), the call-record writer and the webhooks read. The control API encodes each case
/// as its JSON object (`type`, `time` and the case's fields); the published OpenAPI schema is
/// checked against that encoding, case by case and field by field.
public enum RoomEvent: Sendable, Equatable {
    case participantJoined(EventMember, displayName: String?, headers: [String: String])
    case participantEstablished(EventMember, srtpProfile: String)
    case participantICERestarted(EventMember)
    case participantEnded(CallEnd)
    case audioMuted(EventMember)
    case audioUnmuted(EventMember)
    case videoPaused(EventMember, reason: VideoPauseReason)
    case videoResumed(EventMember)
    /// A subscriber's whole slot list, one entry per slot in m-line order.
    case videoSlots(EventMember, slots: [SlotAssignmentEvent])
    case talkingStarted(EventMember)
    case talkingStopped(EventMember)
    /// nil: nobody dominates any more.
    case speakerDominant(EventMember?)
    case roomClosed(roomId: RoomID)
    case callQualityWarning(QualityWarningEvent)
    case callQualityRecovered(QualityRecoveryEvent)
    case recordingFailed(recordingId: String, error: String)

    /// The event's wire name.
    public var name: RoomEventName {
        switch self {
        case .participantJoined: .participantJoined
        case .participantEstablished: .participantEstablished
        case .participantICERestarted: .participantICERestarted
        case .participantEnded: .participantEnded
        case .audioMuted: .audioMuted
        case .audioUnmuted: .audioUnmuted
        case .videoPaused: .videoPaused
        case .videoResumed: .videoResumed
        case .videoSlots: .videoSlots
        case .talkingStarted: .talkingStarted
        case .talkingStopped: .talkingStopped
        case .speakerDominant: .speakerDominant
        case .roomClosed: .roomClosed
        case .callQualityWarning: .callQualityWarning
        case .callQualityRecovered: .callQualityRecovered
        case .recordingFailed: .recordingFailed
        }
    }

    /// The call the event is about, if it is about one.
    public var callId: CallID? {
        switch self {
        case .participantJoined(let who, _, _), .participantEstablished(let who, _), .participantICERestarted(let who),
             .audioMuted(let who), .audioUnmuted(let who), .videoPaused(let who, _), .videoResumed(let who),
             .videoSlots(let who, _), .talkingStarted(let who), .talkingStopped(let who):
            who.callId
        case .participantEnded(let end): end.member.callId
        case .speakerDominant(let who): who?.callId
        case .callQualityWarning(let warning): warning.member?.callId
        case .callQualityRecovered(let recovery): recovery.member?.callId
        case .roomClosed, .recordingFailed: nil
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

/// Who an event is about: the call, and its user when the room still knows it (a
/// `talking.stopped` for a member who already left has only the call).
public struct EventMember: Sendable, Equatable {
    public var callId: CallID
    public var userId: UserID?

    public init(callId: CallID, userId: UserID?) {
        self.callId = callId
        self.userId = userId
    }
}

/// Why a camera is paused: its user asked, or it stopped sending.
public enum VideoPauseReason: String, Sendable, Equatable {
    case request, inactive
}

/// One of a subscriber's slots in a `video.slots` event.
public struct SlotAssignmentEvent: Sendable, Equatable {
    public var slot: Int
    public var mid: String
    /// Who it shows or moves to (nil: empty), the layer (its RID with simulcast).
    public var publisher: EventMember?
    public var layer: Int?
    public var rid: String?
    /// Nothing is forwarded while the subscriber's downlink cannot carry even the lowest layer.
    public var pausedForBandwidth = false

    public init(slot: Int, mid: String) {
        self.slot = slot
        self.mid = mid
    }
}

/// How a call ended, and what the server measured of it (the call record's server statistics).
/// A call that ended on a lost node (`nodeLost`) carries only who, why, whether it was
/// established and the node.
public struct CallEnd: Sendable, Equatable {
    public var member: EventMember
    public var cause: EndCause
    public var established: Bool
    /// The connection's counters, the audio receive and mix figures, the video counters.
    public var media: MediaCounters?
    public var audio: [String: Int]?
    public var video: [String: Int]?
    /// Its slots as they ended (a member with slots only).
    public var slots: [SlotView]?
    public var downlink: DownlinkSummary?
    public var quality: CallQualitySummary?
    /// The node the call ran on, when it ended with that node.
    public var nodeId: String?

    public init(member: EventMember, cause: EndCause, established: Bool) {
        self.member = member
        self.cause = cause
        self.established = established
    }
}

/// A member's downlink over its call: the last estimate, its source, the round-trip time, and
/// the once-a-second samples (their mean, lowest and highest).
public struct DownlinkSummary: Sendable, Equatable {
    public var bitrate: Int
    public var source: String
    public var samples: EstimateSummary
    public var roundTripTimeMilliseconds: Int?
}

/// A quality warning raised: for a member (with the direction it concerns and its MOS), or for
/// the room (`overloadedRoom`).
public struct QualityWarningEvent: Sendable, Equatable {
    public var member: EventMember?
    public var warning: String
    public var direction: String?
    public var value: Int
    public var threshold: Int
    public var mos: Double?
}

/// A quality warning recovered, after `durationSeconds`.
public struct QualityRecoveryEvent: Sendable, Equatable {
    public var member: EventMember?
    public var warning: String
    public var direction: String?
    public var durationSeconds: Int
}

/// An event as a core step produced it, with the media time of that step: the shell numbers it
/// and stamps the wall-clock time (`RoomEventRecord`).
public struct TimedRoomEvent: Sendable, Equatable {
    public let event: RoomEvent
    public let at: MediaTime
}

/// An event as the room's log and subscribers keep it: numbered (`id` increases by one per
/// room, so a client can resume with `Last-Event-ID`) and dated.
public struct RoomEventRecord: Sendable, Equatable {
    public let id: UInt64
    public let time: Date
    public let event: RoomEvent

    public var name: RoomEventName { event.name }

    public init(id: UInt64, time: Date, event: RoomEvent) {
        self.id = id
        self.time = time
        self.event = event
    }
}

/// The last `capacity` events of a room, for `Last-Event-ID` resumption, and the live
/// subscribers. Owned by the `Room` actor.
struct RoomEventLog {
    let capacity: Int
    private(set) var events: [RoomEventRecord] = []
    /// Ids start from the wall clock (microseconds) rather than 1, so they keep increasing when
    /// a room is closed and opened again or the server restarts: a client's Last-Event-ID
    /// from before then never hides the new room's events.
    private var nextID = UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
    private var subscribers: [UInt64: AsyncStream<RoomEventRecord>.Continuation] = [:]
    private var nextSubscriber: UInt64 = 0

    init(capacity: Int = 1024) {
        self.capacity = capacity
    }

    mutating func append(_ event: RoomEvent, at time: Date) -> RoomEventRecord {
        let record = RoomEventRecord(id: nextID, time: time, event: event)
        nextID += 1
        events.append(record)
        if events.count > capacity { events.removeFirst(events.count - capacity) }
        for continuation in subscribers.values { continuation.yield(record) }
        return record
    }

    /// Events after `lastID` still in the buffer (all buffered events when nil).
    func events(after lastID: UInt64?) -> [RoomEventRecord] {
        guard let lastID else { return events }
        return events.filter { $0.id > lastID }
    }

    mutating func subscribe(_ continuation: AsyncStream<RoomEventRecord>.Continuation) -> UInt64 {
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
