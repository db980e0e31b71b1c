import Foundation
import Logging
import Rooms
import ServiceLifecycle
import Storage

/// Writes every call's lifecycle into its call record: established time, end time, end cause
/// and the server's counters. Rooms hand their events to `observer` (on their queues, without
/// waiting); one task writes them in order. Run as a Service listed before the HTTP server and
/// the rooms, so that at shutdown it stops last and drains the `serverShutdown` endings.
public final class CallRecorder: Service, Sendable {
    private let database: any ChorusStore
    private let logger: Logger
    private let stream: AsyncStream<RoomEvent>
    private let continuation: AsyncStream<RoomEvent>.Continuation

    public init(database: any ChorusStore, logger: Logger) {
        self.database = database
        self.logger = logger
        (stream, continuation) = AsyncStream.makeStream(of: RoomEvent.self)
    }

    /// Give this to the `RoomRegistry`.
    public var observer: RoomEventObserver {
        let continuation = self.continuation
        return { _, event in
            if event.name == "participant.established" || event.name == "participant.ended" {
                continuation.yield(event)
            }
        }
    }

    public func run() async throws {
        await withGracefulShutdownHandler {
            for await event in stream {
                await record(event)
            }
        } onGracefulShutdown: {
            self.continuation.finish()
        }
    }

    /// Stops taking events; what was queued is still written (tests without a service group).
    public func finish() {
        continuation.finish()
    }

    func record(_ event: RoomEvent) async {
        guard case .string(let callId)? = event.fields["callId"] else { return }
        let time = event.time
        do {
            switch event.name {
            case "participant.established":
                try await database.modifyCall(callId: callId) { call in
                    call.state = "established"
                    call.establishedAt = time
                }
            case "participant.ended":
                let cause: String? = if case .string(let value)? = event.fields["endCause"] { value } else { nil }
                // The transport's counters at the top level, the audio receive figures under
                // "audio", the forwarder's counters under "video", the downlink and slots by name.
                var merged: [String: EventField] = [:]
                if case .object(let media)? = event.fields["media"] { merged = media }
                if let audio = event.fields["audio"] { merged["audio"] = audio }
                if let video = event.fields["video"] { merged["video"] = video }
                // The downlink estimate over the call and each slot's last layer (issue 16).
                if let downlink = event.fields["downlink"] { merged["downlink"] = downlink }
                if let slots = event.fields["slots"] { merged["slots"] = slots }
                let stats = Self.json(.object(merged))
                try await database.modifyCall(callId: callId) { call in
                    call.state = "ended"
                    call.endedAt = time
                    call.endCause = cause
                    call.serverStats = stats
                }
            default:
                break
            }
        } catch {
            logger.error("call record not written", metadata: ["callId": "\(callId)", "error": "\(error)"])
        }
    }

    static func json(_ field: EventField) -> String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(field)).map { String(decoding: $0, as: UTF8.self) }
    }
}
