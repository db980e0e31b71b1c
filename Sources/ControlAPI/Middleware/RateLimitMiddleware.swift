import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers

/// Token-bucket rate limiting per client IP address: `burst` requests at once, refilled at
/// `perSecond`. Protects the secrets against guessing and the database against floods; a
/// refused request is a 429 with Retry-After. Runs before authentication on purpose, so that
/// failed guesses are counted too.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = ChorusRequestContext
    let limiter: RateLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard limiter.allow(key: context.remoteAddress, now: .now) else {
            // The wait for the next token, in whole seconds (RFC 9110 §10.2.3).
            let wait = max(1, Int((1 / max(limiter.perSecond, 0.001)).rounded(.up)))
            throw APIError(.tooManyRequests, "rateLimited", "too many requests from this client; slow down",
                           headers: [.retryAfter: "\(wait)"])
        }
        return try await next(request, context)
    }
}

/// The buckets behind `RateLimitMiddleware`; a lock because requests arrive on many event loops.
final class RateLimiter: Sendable {
    struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    let perSecond: Double
    let burst: Double
    /// Buckets are forgotten when full, so the table holds only recently active clients.
    private let buckets = NIOLockedValueBox<[String: Bucket]>([:])

    init(perSecond: Double, burst: Double) {
        self.perSecond = perSecond
        self.burst = burst
    }

    func allow(key: String, now: ContinuousClock.Instant) -> Bool {
        buckets.withLockedValue { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
            let elapsed = now - bucket.updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            bucket.tokens = min(burst, bucket.tokens + seconds * perSecond)
            bucket.updated = now
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                return false
            }
            bucket.tokens -= 1
            buckets[key] = bucket
            if buckets.count > 10_000 { prune(&buckets, now: now) }
            return true
        }
    }

    /// Drops buckets that would be full by now: they carry no information.
    private func prune(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant) {
        let refill = Duration.seconds(burst / perSecond)
        buckets = buckets.filter { now - $0.value.updated < refill }
    }
}
