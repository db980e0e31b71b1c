import Foundation
import Logging
import NIOConcurrencyHelpers
import Rooms
import ServiceLifecycle
import Storage

/// Writes every call's lifecycle into its call record: established time, end time, end cause
/// and the server's counters. Rooms hand their events to `observer` (on their queues, without
/// waiting); one task writes them in order. Run as a Service listed before the HTTP server and
/// the rooms, so that at shutdown it stops last and drains the `serverShutdown` endings.
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
    private let stopping = NIOLockedValueBox(false)
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
                await recordRetrying(event)
            }
        } onGracefulShutdown: {
            self.stopping.withLockedValue { $0 = true }
            self.continuation.finish()
        }
    }

    /// Stops taking events; what was queued is still written (tests without a service group).
    public func finish() {
        continuation.finish()
    }

    /// Writes `event`, again and again with backoff (0.25 s doubling to 5 s) while the database
    /// is unavailable.
    func recordRetrying(_ event: RoomEvent) async {
        let clock = ContinuousClock()
        let started = clock.now
        var delay: Duration = .milliseconds(250)
        var attempts = 0
        while await !record(event) {
            attempts += 1
            let limit = stopping.withLockedValue { $0 } ? Self.shutdownRetryLimit : Self.retryLimit
            guard clock.now - started < limit else {
                logger.error("call record given up", metadata: ["event": "\(event.name)", "attempts": "\(attempts)"])
                return
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(5))
        }
        if attempts > 0 {
            logger.info("call record written after the database came back", metadata: ["attempts": "\(attempts)"])
        }
    }

    /// One attempt; false when the database was unavailable (worth retrying).
    @discardableResult
    func record(_ event: RoomEvent) async -> Bool {
        guard case .string(let callId)? = event.fields["callId"] else { return true }
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
            if case .unavailable = error { return false }
            logger.error("call record not written", metadata: ["callId": "\(callId)", "error": "\(error)"])
        }
        return true
    }

    static func json(_ field: EventField) -> String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(field)).map { String(decoding: $0, as: UTF8.self) }
    }
}
