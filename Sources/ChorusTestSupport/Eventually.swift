/// Polls `condition` until it holds or `timeout` of wall-clock time has passed, and returns
/// whether it held. For tests that wait on another thread (an event loop, a reader, a room's
/// queue): `make test` runs every suite at once on two cores, where a fixed count of short
/// sleeps can run out long before the other thread had its turn (CI once saw 2 s go by with
/// an ICE-TCP listener's accepts still pending). A test that waits here fails by the
/// assertion that follows, not by the wait.
@discardableResult
public func eventually(within timeout: Duration = .seconds(30), every interval: Duration = .milliseconds(10),
                       _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try await Task.sleep(for: interval)
    }
}
