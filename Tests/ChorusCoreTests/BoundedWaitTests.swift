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

    /// No clock in the check (a busy test run can starve any timer): the body finishes only
    /// when the test opens its gate after `boundedWait` returned, so a wait that waited for it
    /// would see it finished. A safety opens the gate so that such a failure cannot hang; it is
    /// 10 minutes because `boundedWait`'s own timer resumes on the cooperative pool, which in
    /// `make test` queues it behind every CPU-bound test (under load, a 60 s safety once fired
    /// first).
    @Test func aBodyThatIgnoresCancellationIsNotWaitedFor() async {
        let gate = Gate()
        DispatchQueue.global().asyncAfter(deadline: .now() + 600) { gate.open() }
        let result = await boundedWait(.milliseconds(100)) { () async -> Int in
            await gate.pass()
            return 1
        }
        #expect(result == nil)
        #expect(!gate.passed, "boundedWait waited for a body that ignores cancellation")
        gate.open()
    }
}

/// A gate a task waits at until it is opened, deaf to cancellation: what a stuck pool looks like.
/// `@unchecked Sendable`: its state is touched only under `lock`.
private final class Gate: @unchecked Sendable {
    private let lock = NSLock()
    private var waiting: CheckedContinuation<Void, Never>?
    private var isOpen = false
    private var went = false

    var passed: Bool { lock.withLock { went } }

    func pass() async {
        await withCheckedContinuation { continuation in
            let now = lock.withLock { () -> Bool in
                if isOpen { return true }
                waiting = continuation
                return false
            }
            if now { continuation.resume() }
        }
        lock.withLock { went = true }
    }

    func open() {
        let parked = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            isOpen = true
            defer { waiting = nil }
            return waiting
        }
        parked?.resume()
    }
}
