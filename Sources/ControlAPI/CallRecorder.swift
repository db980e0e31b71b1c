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
            if case .recordingFailed(let id, let error) = event.event {
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
    static func webhookChange(for record: RoomEventRecord, in key: RoomKey) -> CallChange? {
        switch record.event {
        case .callQualityWarning, .callQualityRecovered: break
        default: return nil
        }
        let type = record.name.rawValue
        let body = WebhookBodies.encode(type: type, at: record.time,
                                        data: record.event.fields.merging(["roomId": .string(key.room.rawValue)]) { old, _ in old })
        return .webhookEvent(WebhookEventChange(eventId: WebhookBodies.newEventId(), applicationKey: key.application.rawValue,
                                                roomId: key.room.rawValue, callId: record.event.callId?.rawValue, type: type,
                                                body: body, at: record.time))
    }

    /// The call-record change an event makes, if any.
    static func change(for record: RoomEventRecord) -> CallChange? {
        switch record.event {
        case .participantEstablished(let who, _):
            return .established(callId: who.callId.rawValue, at: record.time)
        case .participantEnded(let end):
            return .ended(callId: end.member.callId.rawValue, at: record.time, cause: end.cause.rawValue,
                          serverStats: end.serverStatistics)
        default:
            return nil
        }
    }
}
