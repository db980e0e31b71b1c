import ChorusCore
import Foundation
import Storage
import Testing

/// The cluster's shared state on both backends: heartbeats, atomic room placement on the
/// least-loaded live node, lease renewal and release, drains, and lost nodes' calls.
@Suite("Cluster store: nodes, leases and lost nodes, on SQLite and on PostgreSQL")
struct ClusterStoreTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func node(_ id: String, at time: Date, participants: Int = 0) -> NodeRecord {
        NodeRecord(nodeId: id, advertiseUrl: "http://\(id):8080", mediaAddresses: "127.0.0.1:10000", startedAt: t0,
                   heartbeatAt: time, participants: participants)
    }

    /// Three nodes (one store each on PostgreSQL, as three processes) over one database.
    func cluster(_ backend: StorageBackend) async throws -> [any ChorusStore] {
        let fixture = try await backend.makeFixture()
        var stores: [any ChorusStore] = []
        for _ in 0..<(backend == .postgres ? 3 : 1) { stores.append(try await fixture.open()) }
        for (index, id) in ["a", "b", "c"].enumerated() {
            _ = try await stores[index % stores.count].registerNode(node(id, at: t0))
        }
        return stores
    }

    func place(_ store: any ChorusStore, _ app: ApplicationRecord, _ room: String, at time: Date) async throws
        -> RoomLease?
    {
        try await store.placeRoom(applicationId: app.id!, roomId: room, now: time, liveAfter: time.addingTimeInterval(-10),
                                  leaseDuration: 10)
    }

    @Test(arguments: StorageBackend.allCases)
    func roomsSpreadOverTheLeastLoadedLiveNodes(_ backend: StorageBackend) async throws {
        let stores = try await cluster(backend)
        let app = try await makeApp(stores[0])
        var owners: [String: Int] = [:]
        for index in 0..<12 {
            _ = try await stores[0].insertRoom(makeRoom(app, "room-\(index)"))
            let lease = try #require(try await place(stores[0], app, "room-\(index)", at: t0.addingTimeInterval(1)))
            owners[lease.nodeId, default: 0] += 1
        }
        #expect(owners == ["a": 4, "b": 4, "c": 4])
        // Placed again: the same lease, whoever asks.
        let again = try await place(stores[stores.count - 1], app, "room-0", at: t0.addingTimeInterval(2))
        #expect(again?.nodeId == (try await stores[0].roomLease(applicationId: app.id!, roomId: "room-0",
                                                                 now: t0.addingTimeInterval(2)))?.nodeId)
        for store in stores { await store.close() }
    }

    @Test(arguments: StorageBackend.allCases)
    func twentyParallelPlacementsOfOneRoomAgreeOnOneNode(_ backend: StorageBackend) async throws {
        let stores = try await cluster(backend)
        let app = try await makeApp(stores[0])
        _ = try await stores[0].insertRoom(makeRoom(app, "contested"))
        let leases = try await withThrowingTaskGroup(of: RoomLease?.self) { group in
            for index in 0..<20 {
                let store = stores[index % stores.count]
                group.addTask { try await self.place(store, app, "contested", at: self.t0.addingTimeInterval(1)) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(leases.count == 20)
        #expect(Set(leases.map { $0?.nodeId }).count == 1)
        #expect(leases.allSatisfy { $0 != nil })
        for store in stores { await store.close() }
    }

    @Test(arguments: StorageBackend.allCases)
    func heartbeatsRenewLeasesAndReportClosedRooms(_ backend: StorageBackend) async throws {
        let stores = try await cluster(backend)
        let store = stores[0]
        let app = try await makeApp(store)
        for room in ["kept", "closed"] { _ = try await store.insertRoom(makeRoom(app, room)) }
        let kept = try #require(try await place(store, app, "kept", at: t0))
        let closed = try #require(try await place(store, app, "closed", at: t0))
        _ = try await store.closeRoom(applicationId: app.id!, roomId: "closed", at: t0)
        // The owner of "kept" renews at t0 + 8: the lease now runs to t0 + 18.
        let outcome = try await store.heartbeat(node(kept.nodeId, at: t0.addingTimeInterval(8)), leaseDuration: 10)
        #expect(outcome.renewed.map(\.roomId).contains("kept"))
        #expect(try await store.roomLease(applicationId: app.id!, roomId: "kept", now: t0.addingTimeInterval(15))?
            .nodeId == kept.nodeId)
        let closer = try await store.heartbeat(node(closed.nodeId, at: t0.addingTimeInterval(8)), leaseDuration: 10)
        #expect(closer.closed.map(\.roomId) == ["closed"])
        #expect(!closer.renewed.map(\.roomId).contains("closed"))
        // An expired lease is no lease: the room may be placed anew.
        #expect(try await store.roomLease(applicationId: app.id!, roomId: "kept", now: t0.addingTimeInterval(19)) == nil)
        for store in stores { await store.close() }
    }

    @Test(arguments: StorageBackend.allCases)
    func aHeartbeatWritesOnlyOverItsOwnRunsRow(_ backend: StorageBackend) async throws {
        let stores = try await cluster(backend)
        let store = stores[stores.count - 1]
        var first = node("a", at: t0)
        first.instanceId = "run-1"
        _ = try await store.registerNode(first)
        // A second run registers under the same ID (it found the first silent): the first's
        // next heartbeat writes nothing, renews nothing, and names the run that holds the row.
        var second = node("a", at: t0.addingTimeInterval(3))
        second.instanceId = "run-2"
        second.advertiseUrl = "http://a-twin:8080"
        _ = try await store.registerNode(second)
        first.heartbeatAt = t0.addingTimeInterval(4)
        let stale = try await store.heartbeat(first, leaseDuration: 10)
        #expect(stale.supersededBy?.instanceId == "run-2" && stale.supersededBy?.advertiseUrl == "http://a-twin:8080")
        #expect(stale.renewed.isEmpty && stale.closed.isEmpty)
        let row = try #require(try await store.nodes().first { $0.nodeId == "a" })
        #expect(row.instanceId == "run-2" && row.heartbeatAt == t0.addingTimeInterval(3))
        second.heartbeatAt = t0.addingTimeInterval(5)
        #expect(try await store.heartbeat(second, leaseDuration: 10).supersededBy == nil)
        // A row from before runs existed (no instance) is anyone's to beat.
        var legacy = node("b", at: t0.addingTimeInterval(5))
        legacy.instanceId = "run-3"
        #expect(try await store.heartbeat(legacy, leaseDuration: 10).supersededBy == nil)
        #expect(try await store.nodes().first { $0.nodeId == "b" }?.instanceId == "run-3")
        for store in stores { await store.close() }
    }

    @Test(arguments: StorageBackend.allCases)
    func drainingAndStaleNodesTakeNoPlacements(_ backend: StorageBackend) async throws {
        let stores = try await cluster(backend)
        let store = stores[0]
        let app = try await makeApp(store)
        #expect(try await store.drainNode("a"))
        #expect(try await !store.drainNode("nobody"))
        // "a" drains; "b" keeps beating; "c" stopped beating at t0.
        let beat = t0.addingTimeInterval(12)
        let drained = try await store.heartbeat(node("a", at: beat), leaseDuration: 10)
        #expect(drained.draining)
        _ = try await store.heartbeat(node("b", at: beat), leaseDuration: 10)
        for index in 0..<3 {
            _ = try await store.insertRoom(makeRoom(app, "r\(index)"))
            #expect(try await place(store, app, "r\(index)", at: beat)?.nodeId == "b")
        }
        try await store.stopNode("b")
        _ = try await store.insertRoom(makeRoom(app, "orphan"))
        #expect(try await place(store, app, "orphan", at: beat) == nil)
        #expect(try await store.roomLease(applicationId: app.id!, roomId: "r0", now: beat) == nil)
        for store in stores { await store.close() }
    }

    @Test(arguments: StorageBackend.allCases)
    func aLostNodesCallsEndOnceAtItsLastHeartbeat(_ backend: StorageBackend) async throws {
        let stores = try await cluster(backend)
        let app = try await makeApp(stores[0])
        _ = try await stores[0].insertRoom(makeRoom(app, "on-c"))
        var call = CallRecord(callId: "00000000-0000-4000-8000-0000000000c1", applicationId: app.id!, roomId: "on-c",
                              userId: "u", displayName: nil, joinedAt: t0)
        call.nodeId = "c"
        _ = try await stores[0].insertCall(call)
        let lastBeat = t0.addingTimeInterval(3)
        _ = try await stores[0].heartbeat(node("c", at: lastBeat), leaseDuration: 10)
        for id in ["a", "b"] {
            _ = try await stores[0].heartbeat(node(id, at: t0.addingTimeInterval(14)), leaseDuration: 10)
        }
        // Every store sweeps at once: exactly one claims "c".
        let sweeps = try await withThrowingTaskGroup(of: [LostNode].self) { group in
            for store in stores {
                group.addTask { try await store.sweepLostNodes(staleBefore: self.t0.addingTimeInterval(4)) }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(sweeps.map(\.nodeId) == ["c"])
        #expect(sweeps.first?.endedCalls.map(\.callId) == [call.callId])
        let ended = try #require(try await stores[0].call(callId: call.callId))
        #expect(ended.endCause == "nodeLost" && ended.state == "ended" && ended.endedAt == lastBeat)
        #expect(try await stores[0].nodes().first { $0.nodeId == "c" }?.state == "lost")
        for store in stores { await store.close() }
    }

    @Test(arguments: StorageBackend.allCases)
    func aRestartedNodeEndsItsPreviousRunsCallsAndHoldsNoOldRooms(_ backend: StorageBackend) async throws {
        let stores = try await cluster(backend)
        let store = stores[0]
        let app = try await makeApp(store)
        _ = try await store.insertRoom(makeRoom(app, "before"))
        let lease = try #require(try await place(store, app, "before", at: t0))
        var call = CallRecord(callId: "00000000-0000-4000-8000-0000000000a1", applicationId: app.id!, roomId: "before",
                              userId: "u", displayName: nil, joinedAt: t0)
        call.nodeId = lease.nodeId
        _ = try await store.insertCall(call)
        let ended = try await store.registerNode(node(lease.nodeId, at: t0.addingTimeInterval(5)))
        #expect(ended.map(\.callId) == [call.callId])
        #expect(try await store.call(callId: call.callId)?.endCause == "nodeLost")
        #expect(try await store.roomLease(applicationId: app.id!, roomId: "before", now: t0.addingTimeInterval(5)) == nil)
        for store in stores { await store.close() }
    }
}
