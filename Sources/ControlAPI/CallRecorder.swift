import Foundation
import Logging
import NIOConcurrencyHelpers
import Rooms
import ServiceLifecycle
import Storage

/// Writes every call's lifecycle into its call record: established time, end time, end cause
/// and the server's counters. Rooms hand their events to `observer` (on their queues, without
/// waiting); one task writes them in order, as many as are waiting in one transaction (up to
/// `batchLimit`), so the records keep up with hundreds of joins and ends a second. Run as a
/// Service listed before the HTTP server and the rooms, so that at shutdown it stops last and
/// drains the `serverShutdown` endings.
///
/// A write the database cannot take now (`unavailable`: PostgreSQL restarting, SQLite busy) is
/// retried with backoff, holding the later events back so that each call's record still
/// changes in order; media never waits for it. Retries stop after `retryLimit`, or a few
/// seconds into shutdown.
public final class CallRecorder: Service, Sendable {
    /// How long one write is retried while the server runs.
    static let retryLimit: Duration = .seconds(600)
    /// How long it is retried once shutdown has begun (the events are then only drained).
    static let shutdownRetryLimit: Duration = .seconds(5)
    /// Changes written in one transaction at most.
    static let batchLimit = 256
    private let stopping = NIOLockedValueBox(false)
    private let database: any ChorusStore
    private let logger: Logger
    /// The changes not yet written, in arrival order; `wakeups` says that there are some.
    private let pending = NIOLockedValueBox<[CallChange]>([])
    private let wakeups: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    public init(database: any ChorusStore, logger: Logger) {
        self.database = database
        self.logger = logger
        (wakeups, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Give this to the `RoomRegistry`.
    public var observer: RoomEventObserver {
        let pending = self.pending
        let continuation = self.continuation
        let database = self.database
        return { key, event in
            if event.name == RoomEventName.recordingFailed.rawValue, case .string(let id)? = event.fields["recordingId"] {
                let error: String? = if case .string(let text)? = event.fields["error"] { text } else { nil }
                Task {
                    _ = try? await database.endRecording(recordingId: id, RecordingEnd(
                        state: "failed", at: event.time, durationMilliseconds: nil, bytes: nil, error: error))
                }
            }
            guard let change = Self.change(for: event) ?? Self.webhookChange(for: event, in: key) else { return }
            pending.withLockedValue { $0.append(change) }
            continuation.yield()
        }
    }

    public func run() async throws {
        await withGracefulShutdownHandler {
            for await _ in wakeups { await writePending() }
            await writePending()
        } onGracefulShutdown: {
            self.stopping.withLockedValue { $0 = true }
            self.continuation.finish()
        }
    }

    /// Stops taking events; what was queued is still written (tests without a service group).
    public func finish() {
        continuation.finish()
    }

    /// Writes what is pending, a batch at a time, until nothing is.
    private func writePending() async {
        while true {
            let batch = pending.withLockedValue { pending -> [CallChange] in
                let batch = Array(pending.prefix(Self.batchLimit))
                pending.removeFirst(batch.count)
                return batch
            }
            guard !batch.isEmpty else { return }
            await writeRetrying(batch)
        }
    }

    /// Writes `batch`, again and again with backoff (0.25 s doubling to 5 s) while the database
    /// is unavailable.
    func writeRetrying(_ batch: [CallChange]) async {
        let clock = ContinuousClock()
        let started = clock.now
        var delay: Duration = .milliseconds(250)
        var attempts = 0
        while true {
            do {
                try await database.recordCallChanges(batch)
                break
            } catch {
                guard case .unavailable = error else {
                    logger.error("call records not written", metadata: ["changes": "\(batch.count)", "error": "\(error)"])
                    return
                }
            }
            attempts += 1
            let limit = stopping.withLockedValue { $0 } ? Self.shutdownRetryLimit : Self.retryLimit
            guard clock.now - started < limit else {
                logger.error("call records given up", metadata: ["changes": "\(batch.count)", "attempts": "\(attempts)"])
                return
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(5))
        }
        if attempts > 0 {
            logger.info("call records written after the database came back", metadata: ["attempts": "\(attempts)"])
        }
    }

    /// A call-quality event as a webhook, written with the call changes (in their order).
    static func webhookChange(for event: RoomEvent, in key: RoomKey) -> CallChange? {
        guard event.name == RoomEventName.callQualityWarning.rawValue
                || event.name == RoomEventName.callQualityRecovered.rawValue else { return nil }
        let callId: String? = if case .string(let id)? = event.fields["callId"] { id } else { nil }
        let body = WebhookBodies.encode(type: event.name, at: event.time,
                                        data: event.fields.merging(["roomId": .string(key.room.rawValue)]) { old, _ in old })
        return .webhookEvent(WebhookEventChange(eventId: WebhookBodies.newEventId(), applicationKey: key.application.rawValue,
                                                roomId: key.room.rawValue, callId: callId, type: event.name, body: body,
                                                at: event.time))
    }

    /// The call-record change an event makes, if any.
    static func change(for event: RoomEvent) -> CallChange? {
        guard case .string(let callId)? = event.fields["callId"] else { return nil }
        switch event.name {
        case RoomEventName.participantEstablished.rawValue:
            return .established(callId: callId, at: event.time)
        case RoomEventName.participantEnded.rawValue:
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
            // The call's quality summary: MOS, and each warning's count and seconds (issue 19).
            if let quality = event.fields["quality"] { merged["quality"] = quality }
            return .ended(callId: callId, at: event.time, cause: cause, serverStats: json(.object(merged)))
        default:
            return nil
        }
    }

    static func json(_ field: EventField) -> String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(field)).map { String(decoding: $0, as: UTF8.self) }
    }
}
