import Cluster
import Foundation
import Logging
import Storage
import Testing

/// One node ID, one run: a second process under a live node's ID is refused before it writes
/// anything, a restart after `kill -9` takes its own ID back (at once when its old process is
/// provably gone, after watching the heartbeat otherwise), and a run whose ID was taken over
/// stops writing heartbeats.
@Suite("Cluster: a node ID is held by one run at a time")
struct NodeRunTests {
    typealias Clock = ClusterNodeTests.Clock

    /// Heartbeats every 0.2 s: the start watches a held ID for 0.5 s.
    static var fast: ClusterTiming {
        var timing = ClusterTiming()
        timing.heartbeatInterval = 0.2
        return timing
    }

    /// A run on another machine: its process can never be proved gone from here.
    static func elsewhere(_ id: String) -> NodeRun {
        NodeRun(instanceId: id, processRef: "other-host 00000000-0000-0000-0000-000000000000 4242")
    }

    @Test func aSecondNodeUnderALiveNodesIdIsRefusedAndTheFirstCarriesOn() async throws {
        let store = try SQLiteStore(path: ":memory:")
        let clock = Clock()
        let first = ClusterNodeTests.node("n0", store: store, clock: clock, url: "http://10.0.0.1:8080",
                                          run: Self.elsewhere("first"), timing: Self.fast)
        try await first.register()
        #expect(await first.claim == .free)
        let beating = Task {
            while !Task.isCancelled {
                clock.advance(0.2)
                _ = await first.beat()
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        defer { beating.cancel() }
        let twin = ClusterNodeTests.node("n0", store: store, clock: clock, url: "http://10.0.0.2:8080", timing: Self.fast)
        let error = await #expect(throws: NodeIdInUse.self) { try await twin.register() }
        #expect(error?.description.contains("http://10.0.0.1:8080") == true)
        #expect(error?.description.contains("--node-id") == true)
        let row = try #require(try await store.nodes().first)
        #expect(row.instanceId == "first" && row.advertiseUrl == "http://10.0.0.1:8080")
        #expect(await first.beat())
        #expect(await first.isConfirmed())
    }

    @Test func aRestartAfterKill9TakesItsIdBackAtOnceWhenTheOldProcessIsGone() async throws {
        let store = try SQLiteStore(path: ":memory:")
        let clock = Clock()
        let mine = NodeRun.current()
        let parts = mine.processRef.split(separator: " ")
        // The previous run: this machine, this boot, a process that no longer exists.
        let pid = try Self.exitedPid()
        let gone = NodeRun(instanceId: "before", processRef: "\(parts[0]) \(parts[1]) \(pid)")
        #expect(mine.provesGone(gone.processRef))
        #expect(!mine.provesGone(mine.processRef))
        #expect(!mine.provesGone(Self.elsewhere("x").processRef))
        #expect(!mine.provesGone("garbage") && !mine.provesGone(nil))
        try await ClusterNodeTests.node("n0", store: store, clock: clock, run: gone).register()
        let restarted = ClusterNodeTests.node("n0", store: store, clock: clock, run: mine)
        // A proof needs no watching (the default timing would watch for 5 s).
        try await restarted.register()
        #expect(await restarted.claim == .predecessorGone)
        #expect(try await store.nodes().first?.instanceId == mine.instanceId)
    }

    @Test func aSilentHolderElsewhereIsTakenOverAfterWatchingItsHeartbeat() async throws {
        let store = try SQLiteStore(path: ":memory:")
        let clock = Clock()
        let old = ClusterNodeTests.node("n0", store: store, clock: clock, run: Self.elsewhere("old"), timing: Self.fast)
        try await old.register()
        clock.advance(1)
        let next = ClusterNodeTests.node("n0", store: store, clock: clock, run: Self.elsewhere("next"), timing: Self.fast)
        try await next.register()
        #expect(await next.claim == .predecessorSilent)
        #expect(try await store.nodes().first?.instanceId == "next")
        // The old run comes back (it was only cut off): it may not write over the new one.
        #expect(await !old.beat())
        #expect(await next.beat())
        #expect(try await store.nodes().first?.instanceId == "next")
    }

    /// The PID of a child that has exited and been reaped.
    static func exitedPid() throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/true")
        try process.run()
        process.waitUntilExit()
        return process.processIdentifier
    }
}
