import AsyncHTTPClient
import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle
import Storage

/// Builds the body of an event that the store wrote without one (a trigger names only its
/// subject record): the API's JSON shapes, which live in ControlAPI (`ControlAPI.webhookBodies`);
/// nil when the subject is gone, and the event is dropped.
public typealias WebhookBodyBuilder = @Sendable (WebhookEventRecord, any ChorusStore) async throws -> String?

/// Delivers the webhook outbox: fans each new event out to its application's endpoints (one
/// delivery each, with the body built once), then posts the due deliveries, signed, at most
/// `concurrency` at a time, and records every attempt. Run as a Service on every node: the
/// store's claims (a lease of `claimSeconds`) keep two nodes from posting the same delivery
/// at once, and a claim left by a killed node lapses, so delivery is at least once.
///
/// Order: a claim hands out only the oldest pending delivery of each (endpoint, room), so one
/// endpoint gets one room's events in order; a retrying delivery holds its room's later ones.
/// Retries follow `retryDelays` (with ±20 % jitter) for at least `retryWindow` after the
/// event; then the delivery is marked failed and stays visible. A 410 disables the endpoint.
/// Posts go out through `WebhookPoster` (AsyncHTTPClient, pinned to the address the
/// `OutboundAddressPolicy` checked).
public final class WebhookDispatcher: Service, Sendable {
    static let retryDelays: [Double] = [1, 2, 4, 8, 15, 30, 60, 120, 300, 600, 1_800, 3_600, 7_200]
    static let retryWindow: TimeInterval = 24 * 3_600
    static let claimSeconds: TimeInterval = 30
    static let concurrency = 16
    /// How often the outbox is polled when the store cannot tell of new events.
    static let idlePoll: Duration = .milliseconds(200)
    /// How often it is polled when the store tells of each new event: only due retries, claims
    /// lapsed by a killed node and anything the store could not see remain to be found.
    static let observedPoll: Duration = .seconds(1)

    private let database: any ChorusStore
    private let poster: WebhookPoster
    private let bodies: WebhookBodyBuilder
    private let logger: Logger
    private let clock: @Sendable () -> Date
    private let stopping = NIOLockedValueBox(false)

    public init(database: any ChorusStore, bodies: @escaping WebhookBodyBuilder,
                group: any EventLoopGroup = HTTPClient.defaultEventLoopGroup,
                allowPrivateAddresses: Bool, logger: Logger,
                clock: @escaping @Sendable () -> Date = Date.init) {
        self.database = database
        self.bodies = bodies
        self.poster = WebhookPoster(group: group, policy: OutboundAddressPolicy(allowPrivate: allowPrivateAddresses))
        self.logger = logger
        self.clock = clock
    }

    enum Done: Sendable { case delivery, timer, inserted }

    public func run() async throws {
        let (inserts, insert) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let observed = database.observeWebhookEventInserts { insert.yield() }
        let poll = observed ? Self.observedPoll : Self.idlePoll
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Done.self) { group in
                var inflight = 0
                var timer = false
                var watching = false
                var woken = Done.inserted
                while !stopping.withLockedValue({ $0 }) {
                    if await mayHaveWork(woken) {
                        await fanOut()
                        for send in await claim(limit: Self.concurrency - inflight) {
                            inflight += 1
                            group.addTask { await self.deliver(send); return .delivery }
                        }
                    }
                    if !timer {
                        timer = true
                        group.addTask { try? await Task.sleep(for: poll); return .timer }
                    }
                    if observed, !watching {
                        // One waiter at a time: an AsyncStream takes one consumer.
                        watching = true
                        group.addTask {
                            var next = inserts.makeAsyncIterator()
                            _ = await next.next()
                            return .inserted
                        }
                    }
                    guard let done = await group.next() else { return }
                    woken = done
                    switch done {
                    case .delivery: inflight -= 1
                    case .timer: timer = false
                    case .inserted: watching = false
                    }
                }
                // Shutting down: let the posts in flight finish (each ends within its timeout).
                while inflight > 0, let done = await group.next() { if done == .delivery { inflight -= 1 } }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            self.stopping.withLockedValue { $0 = true }
            insert.yield()  // ends the wait for the next poll at once
        }
    }

    /// Whether a pass of fan-out and claims is worth running after `woken`. A timer's poll first
    /// asks whether the outbox holds anything at all: the fan-out and the claim are write
    /// transactions, and they were an idle server's whole cost, every poll, with nothing to do.
    /// An error says yes (the pass reports it).
    private func mayHaveWork(_ woken: Done) async -> Bool {
        guard woken == .timer else { return true }
        return (try? await database.hasWebhookWork()) ?? true
    }

    /// Gives each new event its body and its deliveries.
    func fanOut() async {
        do {
            try await database.dropUntakenWebhookEvents()
            for event in try await database.unfannedWebhookEvents(limit: 100) {
                guard let row = event.id else { continue }
                let body = try await bodies(event, database)
                try await database.fanOutWebhookEvent(rowId: row, body: body, now: clock())
            }
        } catch {
            logger.warning("webhook fan-out failed", metadata: ["error": "\(error)"])
        }
    }

    private func claim(limit: Int) async -> [WebhookSend] {
        guard limit > 0 else { return [] }
        let now = clock()
        do {
            return try await database.claimWebhookDeliveries(now: now, until: now.addingTimeInterval(Self.claimSeconds),
                                                             limit: limit)
        } catch {
            logger.warning("webhook claim failed", metadata: ["error": "\(error)"])
            return []
        }
    }

    /// One attempt: post, then record what happened.
    func deliver(_ send: WebhookSend) async {
        let body = Array(send.body.utf8)
        let timestamp = Int(clock().timeIntervalSince1970)
        let headers = WebhookSignature.headers(id: send.eventId, timestamp: timestamp, body: body, secret: send.secret)
        let result: WebhookPoster.Result
        if let url = WebhookURL(send.url) {
            result = await poster.post(to: url, headers: headers, body: body)
        } else {
            result = .failure("the endpoint URL is not valid")
        }
        let outcome = Self.outcome(result, send: send, now: clock())
        Counter(label: "chorus_webhook_attempts_total", dimensions: [("outcome", Self.name(outcome))]).increment()
        do {
            try await database.recordWebhookAttempt(deliveryRowId: send.deliveryRowId, outcome: outcome, at: clock())
        } catch {
            // The claim lapses and the delivery is tried again: at least once.
            logger.warning("webhook attempt not recorded", metadata: ["error": "\(error)"])
        }
    }

    /// What an attempt's result means for its delivery.
    static func outcome(_ result: WebhookPoster.Result, send: WebhookSend, now: Date) -> WebhookAttemptOutcome {
        var status: Int?
        var error: String
        var retryAfter: Int?
        switch result {
        case .status(let code, _) where (200..<300).contains(code): return .delivered(status: code)
        case .status(410, _): return .gone
        case .status(let code, let after):
            (status, error, retryAfter) = (code, code / 100 == 3 ? "redirect \(code) not followed" : "status \(code)", after)
        case .failure(let reason):
            error = reason
        }
        guard now.timeIntervalSince(send.eventCreatedAt) < retryWindow else { return .failed(status: status, error: error) }
        var delay = retryDelays[min(send.attempts, retryDelays.count - 1)] * Double.random(in: 0.8...1.2)
        if let retryAfter, status == 429 || status == 503 { delay = max(delay, min(Double(retryAfter), 3_600)) }
        return .retry(status: status, error: String(error.prefix(500)), next: now.addingTimeInterval(delay))
    }

    static func name(_ outcome: WebhookAttemptOutcome) -> String {
        switch outcome {
        case .delivered: "delivered"
        case .retry: "retry"
        case .failed: "failed"
        case .gone: "gone"
        }
    }
}
