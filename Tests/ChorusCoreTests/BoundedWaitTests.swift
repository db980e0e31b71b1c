import ChorusCore
import Dispatch
import Foundation
import Testing

/// `boundedWait` gives the body's result when it finishes in time, and nil at the deadline
/// even when the body ignores its cancellation (which a task group would wait out).
@Suite("Bounded wait")
struct BoundedWaitTests {
    @Test func aBodyInTimeGivesItsResultOrItsError() async throws {
        #expect(try await boundedWait(.seconds(5)) { 42 }?.get() == 42)
        struct Refused: Error {}
        let failed = await boundedWait(.seconds(5)) { () async throws -> Int in throw Refused() }
        #expect(throws: Refused.self) { try failed?.get() }
    }

    @Test func aBodyThatIgnoresCancellationIsNotWaitedFor() async {
        let started = ContinuousClock.now
        // Resumed only after 3 s, whatever cancellation says: what a stuck pool looks like.
        let result = await boundedWait(.milliseconds(100)) { () async -> Int in
            await withCheckedContinuation { continuation in
                DispatchQueue.global().asyncAfter(deadline: .now() + 3) { continuation.resume(returning: 1) }
            }
        }
        #expect(result == nil)
        #expect(ContinuousClock.now - started < .seconds(2))
    }
}
