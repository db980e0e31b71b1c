import Cluster
import Foundation
import Logging
import NIOConcurrencyHelpers
import Rooms
import Storage
import Testing

/// A node on its own, over an SQLite store and a clock the test moves: its identity rules, its
/// heartbeat and lease confirmation, a stop, and the calls it finds left behind by a lost node.
/// (Placement and redirects through the API are in ControlAPITests' ClusterAPITests.)
@Suite("Cluster: a node's identity, heartbeat and departures")
struct ClusterNodeTests {
    final class Clock: Sendable {
        private let box = NIOLockedValueBox(Date(timeIntervalSince1970: 1_900_000_000))
        var now: Date { box.withLockedValue { $0 } }
        func advance(_ seconds: TimeInterval) { box.withLockedValue { $0 += seconds } }
    }

    static func node(_ id: String, store: any ChorusStore, clock: Clock, url: String? = nil, run: NodeRun = .current(),
                     timing: ClusterTiming = .init()) -> ClusterNode {
        ClusterNode(identity: NodeIdentity(nodeId: id, advertiseUrl: url ?? "http://\(id).example:8080/", mediaAddresses: ""),
                    store: store, registry: RoomRegistry(logger: Logger(label: "test")), timing: timing, run: run,
                    logger: Logger(label: "test"), clock: { clock.now })
    }

    @Test func nodeIDsAreSafeNamesAndHostNamesAreMadeSo() {
        #expect(NodeIdentity.isValidNodeId("chorus-0.eu_west"))
        for bad in ["", String(repeating: "n", count: 65), "a b", "ünïcode", "x/y", "n;drop"] {
            #expect(!NodeIdentity.isValidNodeId(bad), "\(bad)")
        }
        #expect(NodeIdentity.nodeId(from: "büro host") == "b--ro-host")
        #expect(NodeIdentity.isValidNodeId(NodeIdentity.nodeId(from: String(repeating: "é", count: 80))))
        #expect(NodeIdentity.nodeId(from: "") == "node")
        #expect(NodeIdentity(nodeId: "n", advertiseUrl: "http://h:1/", mediaAddresses: "").advertiseUrl == "http://h:1")
    }

    @Test func leasesAreConfirmedOnlyWhileHeartbeatsLand() async throws {
        let store = try SQLiteStore(path: ":memory:")
        let clock = Clock()
        let node = Self.node("a", store: store, clock: clock)
        #expect(await !node.isConfirmed())
        try await node.register()
        #expect(await node.isConfirmed())
        clock.advance(11)
        #expect(await !node.isConfirmed())
        #expect(await node.ensureFresh())
        #expect(try await store.nodes().map(\.state) == ["up"])
        await node.startDraining()
        #expect(await node.beat())
        #expect(try await store.nodes().map(\.state) == ["draining"])
        await node.stop()
        #expect(await !node.beat())
        #expect(try await store.nodes().map(\.state) == ["stopped"])
        #expect(try await node.advertiseUrl(of: "a") == "http://a.example:8080")
    }

    @Test func aLostNodesOpenCallsEndAtItsLastHeartbeat() async throws {
        let store = try SQLiteStore(path: ":memory:")
        let clock = Clock()
        let app = try await store.insertApplication(ApplicationRecord(
            id: nil, key: "k", secret: "s", name: "app", autoCreateRooms: true, createdAt: clock.now))
        let room = try await store.insertRoom(RoomRecord(applicationId: app.id!, roomId: "r", maxParticipants: 10,
                                                         mixedSpeakers: 3, videoSlots: 0, createdAt: clock.now))
        let lost = Self.node("lost", store: store, clock: clock)
        try await lost.register()
        let lastHeartbeat = clock.now
        let call = try await store.insertCall(CallRecord(callId: "c1", applicationId: app.id!, roomId: "r", userId: "u",
                                                         displayName: nil, joinedAt: clock.now))
        try await store.modifyCall(callId: call.callId) { $0.nodeId = "lost" }
        clock.advance(30)
        let here = Self.node("here", store: store, clock: clock)
        try await here.register()
        let departures = try await here.departures(of: room)
        #expect(departures.map(\.callId) == ["c1"] && departures.first?.nodeId == "lost")
        let stored = try #require(try await store.call(callId: "c1"))
        #expect(stored.endCause == "nodeLost" && stored.endedAt == lastHeartbeat)
        // Told again while it is recent news, never ended twice.
        #expect(try await here.departures(of: room).map(\.callId) == ["c1"])
    }
}
