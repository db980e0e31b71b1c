import Foundation
import Auth
import Storage
import Webhooks

/// The body of each webhook event, built when the dispatcher fans the event out (once: every
/// endpoint and every retry sends the same bytes). Standard Webhooks' shape: `type`,
/// `timestamp` (when it happened), `data`. An event a trigger wrote names its subject record;
/// nil when that record is gone (a refused join's call), and the event is dropped.
enum WebhookBodies {
    /// The event types an endpoint may ask for.
    static let types: Set<String> = [
        "room.started", "room.ended", "participant.joined", "participant.left", "call.ended",
        "call.quality.warning", "call.quality.recovered", "recording.ready", "recording.failed", "statistics.uploaded",
    ]

    struct Envelope<Data: Encodable>: Encodable {
        var type: String
        var timestamp: Date
        var data: Data
    }

    struct RoomData: Encodable {
        var roomId: String
        var createdAt: Date
        var closedAt: Date?
        var maxParticipants: Int
        var mixedSpeakers: Int
        var videoSlots: Int
    }

    struct JoinedData: Encodable {
        var callId: String
        var roomId: String
        var userId: String
        var displayName: String?
        var headers: [String: String]?
        var joinedAt: Date
    }

    struct LeftData: Encodable {
        var callId: String
        var roomId: String
        var userId: String
        var endCause: String?
        var endedAt: Date?
        var headers: [String: String]?
    }

    struct UploadData: Encodable {
        var statisticsId: String
        var callId: String
        var uploadedBy: String
        var receivedAt: Date
    }

    /// The body of `event`, from its subject's record as the store has it now.
    static func body(for event: WebhookEventRecord, in database: any ChorusStore) async throws -> String? {
        if let body = event.body { return body }
        guard let subject = event.subject else { return nil }
        switch event.type {
        case "room.started", "room.ended":
            guard let row = Int64(subject), let room = try await database.room(rowId: row) else { return nil }
            return encode(event, RoomData(roomId: room.roomId, createdAt: room.createdAt, closedAt: room.closedAt,
                                          maxParticipants: room.maxParticipants, mixedSpeakers: room.mixedSpeakers,
                                          videoSlots: room.videoSlots))
        case "participant.joined":
            guard let call = try await database.call(callId: subject) else { return nil }
            return encode(event, JoinedData(callId: call.callId, roomId: call.roomId, userId: call.userId,
                                            displayName: call.displayName, headers: CallHeaders.decoded(call.headers),
                                            joinedAt: call.joinedAt))
        case "participant.left":
            guard let call = try await database.call(callId: subject) else { return nil }
            return encode(event, LeftData(callId: call.callId, roomId: call.roomId, userId: call.userId,
                                          endCause: call.endCause, endedAt: call.endedAt,
                                          headers: CallHeaders.decoded(call.headers)))
        case "call.ended":
            guard let call = try await database.call(callId: subject) else { return nil }
            return encode(event, CallResponse(call))
        case "recording.ready", "recording.failed":
            guard let recording = try await database.recording(recordingId: subject) else { return nil }
            return encode(event, RecordingResponse(recording))
        case "statistics.uploaded":
            guard let row = Int64(subject), let upload = try await database.statisticsUpload(rowId: row) else { return nil }
            return encode(event, UploadData(statisticsId: upload.statisticsId, callId: upload.callId,
                                            uploadedBy: upload.uploadedBy, receivedAt: upload.receivedAt))
        default:
            return nil
        }
    }

    /// An event the server raises itself (no stored state changes), with its body.
    static func event<Data: Encodable>(type: String, applicationId: Int64, roomId: String?, data: Data,
                                       at time: Date) -> WebhookEventRecord {
        let record = WebhookEventRecord(eventId: newEventId(), applicationId: applicationId, roomId: roomId, type: type,
                                        body: "", createdAt: time)
        var stored = record
        stored.body = encode(record, data)
        return stored
    }

    static func newEventId() -> String {
        "msg_" + SecureRandom.hex(16)
    }

    static func encode<Data: Encodable>(_ event: WebhookEventRecord, _ data: Data) -> String {
        encode(type: event.type, at: event.createdAt, data: data)
    }

    static func encode<Data: Encodable>(type: String, at time: Date, data: Data) -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let envelope = Envelope(type: type, timestamp: time, data: data)
        return (try? encoder.encode(envelope)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

extension ControlAPI {
    /// What the webhook dispatcher (Webhooks) builds event bodies with: the API's JSON shapes.
    public static let webhookBodies: WebhookBodyBuilder = { event, database in
        try await WebhookBodies.body(for: event, in: database)
    }
}

extension SecureRandom {
    /// `count` random bytes as lower-case hex.
    static func hex(_ count: Int) -> String {
        bytes(count).hexString
    }
}
