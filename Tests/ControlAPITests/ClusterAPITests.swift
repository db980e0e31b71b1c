import ChorusCore
import ChorusTestSupport
import ControlAPI
import Foundation
import Rooms
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

    /// "remote" ran the room with three calls and was lost: one call the sweeper already ended
    /// `nodeLost`, two are still open in the store. When the room opens here (a listener's SSE
    /// request places it), the open ones are ended `nodeLost` at remote's last heartbeat, and
    /// all three are told as `participant.ended` on the room's stream; a call ended long ago
    /// and a call ended by its user are not.
    @Test func aLostNodesCallsAreToldWhenItsRoomOpensHere() async throws {
        try await TestServer.with { server in
            let room = try await placeOneRoomElsewhere(server)
            let lastHeartbeat = server.clock.now
            var calls: [String: String] = [:]
            for (user, cause, minutesAgo) in [("ann", nil, 0), ("bob", nil, 0), ("cid", "nodeLost", 0),
                                              ("dan", "nodeLost", 10), ("eve", "hungUp", 0)] as [(String, String?, Int)] {
                let call = try await server.insertCall(user: user, room: room)
                calls[user] = call.callId
                try await server.database.modifyCall(callId: call.callId) { stored in
                    stored.nodeId = "remote"
                    if let cause {
                        stored.state = "ended"
                        stored.endCause = cause
                        stored.endedAt = lastHeartbeat.addingTimeInterval(-Double(minutesAgo) * 60)
                        stored.joinedAt = stored.endedAt!.addingTimeInterval(-1)
                    }
                }
            }
            server.clock.advance(11)
            // Placed here by the listener; the stream itself never ends, so the room's log is
            // read through the registry rather than over HTTP.
            let key = RoomKey(application: try #require(server.application.applicationKey),
                              room: try RoomID(validating: room))
            let listener = Task { try await server.request("GET", "/v1/rooms/\(room)/events") }
            var ended: [CallEnd] = []
            try await eventually(every: .milliseconds(20)) {
                if let opened = await server.api.registry.room(for: key) {
                    ended = await opened.subscribe(after: nil).replay.compactMap { record in
                        if case .participantEnded(let end) = record.event { end } else { nil }
                    }
                }
                return ended.count >= 3
            }
            listener.cancel()
            #expect(Set(ended.map(\.member.callId.rawValue)) == Set(["ann", "bob", "cid"].map { calls[$0]! }))
            #expect(ended.allSatisfy { $0.cause == .nodeLost && $0.nodeId == "remote" })
            for user in ["ann", "bob"] {
                let stored = try #require(try await server.database.call(callId: calls[user]!))
                #expect(stored.state == "ended" && stored.endCause == "nodeLost")
                #expect(stored.endedAt.map { abs($0.timeIntervalSince(lastHeartbeat)) < 0.01 } == true)
            }
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
}
