import ControlAPI
import Foundation
import Storage
import Testing

/// The API of a node in a cluster, with a second node written straight into the store: rooms
/// placed on it are redirected there (path and query kept), reads are served here from the store,
/// and once that node's heartbeat is stale its rooms are placed here again.
@Suite("REST: cluster placement and redirects")
struct ClusterAPITests {
    /// Places two rooms: the first on this node ("local", fewest leases, first by ID), the second
    /// on "remote"; returns the remote one's ID.
    func placeOneRoomElsewhere(_ server: TestServer) async throws -> String {
        _ = try await server.database.registerNode(NodeRecord(
            nodeId: "remote", advertiseUrl: "http://remote.example:8080", mediaAddresses: "192.0.2.7:10000",
            startedAt: server.clock.now, heartbeatAt: server.clock.now))
        #expect(try await server.request("POST", "/v1/rooms", json: ["roomId": "here"]).status == 201)
        #expect(try await server.request("POST", "/v1/rooms", json: ["roomId": "there"]).status == 201)
        return "there"
    }

    @Test func roomBoundRequestsForAnotherNodesRoomAre307ToIt() async throws {
        try await TestServer.with { server in
            let room = try await placeOneRoomElsewhere(server)
            let list = try await server.request("GET", "/v1/rooms/\(room)/participants?probe=1")
            #expect(list.status == 307 && list.errorCode == "roomElsewhere")
            #expect(list.header("location") == "http://remote.example:8080/v1/rooms/\(room)/participants?probe=1")
            let join = try await server.request("POST", "/v1/rooms/\(room)/participants",
                                                json: ["sdp": "v=0", "userId": "u"])
            #expect(join.status == 307 && join.header("location") == "http://remote.example:8080/v1/rooms/\(room)/participants")
            let events = try await server.request("GET", "/v1/rooms/\(room)/events")
            #expect(events.status == 307)
            let patch = try await server.request("PATCH", "/v1/rooms/\(room)", json: ["mixedSpeakers": 4])
            #expect(patch.status == 307)
            // Reads and the close are served by any node, from the store.
            #expect(try await server.request("GET", "/v1/rooms/\(room)").status == 200)
            #expect(try await server.request("GET", "/v1/rooms/here/participants").status == 200)
            let nodes = try await server.request("GET", "/v1/nodes").json["nodes"] as? [[String: Any]]
            #expect(nodes?.compactMap { $0["nodeId"] as? String } == ["local", "remote"])
            #expect(try await server.request("DELETE", "/v1/rooms/\(room)").status == 204)
            #expect(try await server.request("GET", "/v1/rooms/\(room)/participants").status == 404)
        }
    }

    @Test func aStaleNodesRoomsArePlacedHereAgain() async throws {
        try await TestServer.with { server in
            let room = try await placeOneRoomElsewhere(server)
            #expect(try await server.request("GET", "/v1/rooms/\(room)/participants").status == 307)
            // "remote" stops beating; this node beats on (the API beats before placing).
            server.clock.advance(11)
            let list = try await server.request("GET", "/v1/rooms/\(room)/participants")
            #expect(list.status == 404) // a read does not place the room…
            let join = try await server.request("POST", "/v1/rooms/\(room)/participants",
                                                json: ["sdp": "v=0", "userId": "u"])
            #expect(join.status == 422 || join.status == 503) // …a join does, here: no media in this test
            #expect(join.status != 307)
            let nodes = try await server.request("GET", "/v1/nodes").json["nodes"] as? [[String: Any]]
            let remote = nodes?.first { $0["nodeId"] as? String == "remote" }
            #expect(remote?["live"] as? Bool == false)
        }
    }

    @Test func drainingANodeThroughTheAPI() async throws {
        try await TestServer.with { server in
            _ = try await placeOneRoomElsewhere(server)
            let drained = try await server.request("POST", "/v1/nodes/remote/drain")
            #expect(drained.status == 202 && drained.json["state"] as? String == "draining")
            // New rooms avoid the draining node.
            for index in 0..<3 {
                #expect(try await server.request("POST", "/v1/rooms", json: ["roomId": "new-\(index)"]).status == 201)
                #expect(try await server.request("GET", "/v1/rooms/new-\(index)/participants").status == 200)
            }
            #expect(try await server.request("POST", "/v1/nodes/nobody/drain").errorCode == "nodeNotFound")
            let user = try await server.register("alice", sequence: 1)
            #expect(try await server.request("GET", "/v1/nodes", auth: "Bearer \(user)").status == 403)
        }
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
}
