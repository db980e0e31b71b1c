import Foundation

/// Waits for `body` at most `timeout`: nil when it has not finished by then (it is cancelled and
/// left to end on its own). A task group cannot bound a wait like this, because it waits for
/// every child, cancelled or not; a pool waiting for a connection it cannot get may not answer
/// its cancellation for a long time, and the store's callers (a join, the drain at shutdown)
/// must not wait with it.
public func boundedWait<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T)
    async -> Result<T, any Error>?
{
    let work = Task { try await body() }
    let outcome = await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, any Error>?, Never>) in
            let first = FirstResume(continuation)
            let timer = Task {
                do {
                    try await Task.sleep(for: timeout)
                    first.resume(nil)
                } catch {}  // cancelled: the work finished first
            }
            Task {
                let result = await work.result
                timer.cancel()
                first.resume(result)
            }
        }
    } onCancel: {
        work.cancel()
    }
    if outcome == nil { work.cancel() }
    return outcome
}

/// Resumes a continuation with the first of several results; the others are dropped.
/// `@unchecked Sendable`: `continuation` is read and cleared only under `lock`, so it is taken
/// out exactly once whichever thread comes first.
private final class FirstResume<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, Never>?

    init(_ continuation: CheckedContinuation<T, Never>) {
        self.continuation = continuation
    }

    func resume(_ value: T) {
        let taken = lock.withLock {
            defer { continuation = nil }
            return continuation
        }
        taken?.resume(returning: value)
    }
}
