import Auth
import Benchmark
import ChorusCore
import Foundation

/// What `make bench` checks: each benchmark's allocations (p90) against the figure stored in
/// Benchmarks/Thresholds (`make bench-thresholds` rewrites them), with a slack of two; times are
/// reported, never checked (this machine is too noisy for that).
var allocationThresholds: [BenchmarkMetric: BenchmarkThresholds] {
    [.mallocCountTotal: BenchmarkThresholds(absolute: [.p90: 2])]
}

/// Costs on the control plane's per-request paths: what every registration and every
/// authenticated request pays before touching the database.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .mallocCountTotal, .throughput],
                                           maxDuration: .seconds(2), thresholds: allocationThresholds)

    let key = try! ApplicationKey(validating: "3414cb6d-9f4a-406a-a52e-b2ef14380668")
    let secret = "4/hSWjjY6CVZ/x3aJQFJVg=="
    let user = try! UserID(validating: "alice")
    let sequence = RegistrationSequence(42)
    let signature = RegistrationSignature.sign(userId: user, applicationKey: key, sequence: sequence,
                                               applicationSecret: secret)

    Benchmark("Registration signature verify") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(RegistrationSignature.verify(signature, userId: user, applicationKey: key, sequence: sequence,
                                                   applicationSecret: secret))
        }
    }

    let signer = AccessTokenSigner(key: Array(repeating: 7, count: 32))
    let now = Date()
    let token = signer.sign(AccessTokenClaims(userId: user, applicationKey: key, issuedAt: now, lifetime: 3600,
                                              tokenId: "t"))
    Benchmark("Access token verify (HS256)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try? signer.verify(token, now: now))
        }
    }

    let request = ApplicationRequestSignature(method: "POST", body: Array(#"{"roomId":"demo"}"#.utf8),
                                              contentType: "application/json", timestamp: "2026-11-22T10:00:00Z",
                                              path: "/v1/rooms")
    let requestSignature = request.signature(secret: secret)!
    let at = ApplicationRequestSignature.parseTimestamp("2026-11-22T10:00:00Z")!
    Benchmark("Signed application request verify") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(request.verify(requestSignature, secret: secret, now: at))
        }
    }

    Benchmark("Room ID validation (64 chars)") { benchmark in
        let id = String(repeating: "r", count: 64)
        for _ in benchmark.scaledIterations {
            blackHole(try? RoomID(validating: id))
        }
    }
}
