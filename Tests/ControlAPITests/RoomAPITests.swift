import Foundation
import Rooms
import Testing

@Suite("REST: rooms, operations, errors")
struct RoomAPITests {
    @Test func operationsEndpoints() async throws {
        try await TestServer.with { server in
            #expect(try await server.request("GET", "/healthz", auth: nil).status == 200)
            #expect(try await server.request("GET", "/readyz", auth: nil).status == 200)
            let metrics = try await server.request("GET", "/metrics", auth: nil)
            #expect(metrics.status == 200)
            #expect(String(decoding: metrics.body, as: UTF8.self).contains("chorus_rooms_open"))
            let spec = try await server.request("GET", "/v1/openapi.yaml", auth: nil)
            #expect(spec.status == 200)
            #expect(String(decoding: spec.body, as: UTF8.self).hasPrefix("openapi: 3.1"))
        }
    }

    /// Every event a room emits has a schema in the published `RoomEvent` union: an event
    /// missing there fails every client that validates the stream (schemathesis did, ST108).
    @Test func everyRoomEventHasASchema() async throws {
        try await TestServer.with { server in
            let spec = String(decoding: try await server.request("GET", "/v1/openapi.yaml", auth: nil).body, as: UTF8.self)
            let lines = spec.split(separator: "\n", omittingEmptySubsequences: false)
            let start = try #require(lines.firstIndex(of: "    RoomEvent:"))
            // The union's own lines: up to the next schema at the same indentation.
            let body = lines[(start + 1)...].prefix { $0.hasPrefix("      ") || $0.isEmpty }
            let mapping = body.joined(separator: "\n")
            // The SSE frame's `event:` field lists the same names.
            let frame = try #require(lines.firstIndex(of: "    RoomEventFrame:"))
            let frameNames = lines[(frame + 1)...].prefix { $0.hasPrefix("      ") || $0.isEmpty }
                .filter { $0.hasPrefix("            - ") }.map { $0.dropFirst(14) }
            #expect(Set(frameNames.map(String.init)) == Set(RoomEventName.allCases.map(\.rawValue)))
            for name in RoomEventName.allCases {
                #expect(mapping.contains("          \(name.rawValue): \"#/components/schemas/"), "\(name.rawValue)")
            }
        }
    }

    @Test func roomLifecycle() async throws {
        try await TestServer.with { server in
            let created = try await server.request("POST", "/v1/rooms", json: ["roomId": "standup", "videoSlots": 4])
            #expect(created.status == 201)
            #expect(created.header("location") == "/v1/rooms/standup")
            #expect(created.json["videoSlots"] as? Int == 4)
            #expect(created.json["mixedSpeakers"] as? Int == 3)
            #expect(created.json["maxParticipants"] as? Int == 100)
            #expect(created.header("x-request-id")?.isEmpty == false)

            let again = try await server.request("POST", "/v1/rooms", json: ["roomId": "standup"])
            #expect(again.status == 409 && again.errorCode == "roomExists")

            let patched = try await server.request("PATCH", "/v1/rooms/standup", json: ["mixedSpeakers": 5])
            #expect(patched.status == 200 && patched.json["mixedSpeakers"] as? Int == 5)
            #expect(try await server.request("GET", "/v1/rooms/standup").json["mixedSpeakers"] as? Int == 5)

            let bad = try await server.request("PATCH", "/v1/rooms/standup", json: ["mixedSpeakers": 0])
            #expect(bad.status == 422 && bad.errorCode == "invalidRoomSettings")
            let rename = try await server.request("PATCH", "/v1/rooms/standup", json: ["roomId": "other"])
            #expect(rename.status == 422 && rename.errorCode == "roomIdImmutable")

            #expect(try await server.request("DELETE", "/v1/rooms/standup").status == 204)
            let gone = try await server.request("GET", "/v1/rooms/standup")
            #expect(gone.status == 404 && gone.errorCode == "roomNotFound")
            #expect(try await server.request("POST", "/v1/rooms", json: ["roomId": "standup"]).status == 201)
        }
    }

    @Test func generatedRoomIDsAreValid() async throws {
        try await TestServer.with { server in
            let created = try await server.request("POST", "/v1/rooms")
            #expect(created.status == 201)
            let id = created.json["roomId"] as? String ?? ""
            #expect(!id.isEmpty && id.count <= 64)
            #expect(try await server.request("GET", "/v1/rooms/\(id)").status == 200)
        }
    }

    @Test func roomIDRulesAtTheAPI() async throws {
        try await TestServer.with { server in
            let ok = String(repeating: "r", count: 64)
            #expect(try await server.request("POST", "/v1/rooms", json: ["roomId": ok]).status == 201)
            let long = try await server.request("POST", "/v1/rooms", json: ["roomId": ok + "r"])
            #expect(long.status == 400 && long.errorCode == "invalidRoomId")
            let dotted = try await server.request("GET", "/v1/rooms/a.b")
            #expect(dotted.status == 400 && dotted.errorCode == "invalidRoomId")
            let spaced = try await server.request("GET", "/v1/rooms/a%20b")
            #expect(spaced.status == 400 && spaced.errorCode == "invalidRoomId")
            // Percent-encoded allowed characters name the same room (encodeURIComponent sends %3D).
            #expect(try await server.request("POST", "/v1/rooms", json: ["roomId": "mb="]).status == 201)
            #expect(try await server.request("GET", "/v1/rooms/mb%3D").status == 200)
            #expect(try await server.request("GET", "/v1/rooms/%6Db=").status == 200)
            #expect(try await server.request("GET", "/v1/rooms/%ZZ").status == 400)
        }
    }

    @Test func pagination() async throws {
        try await TestServer.with { server in
            for i in 0..<5 {
                #expect(try await server.request("POST", "/v1/rooms", json: ["roomId": "p\(i)"]).status == 201)
            }
            var seen: [String] = []
            var path = "/v1/rooms?pageSize=2"
            var pages = 0
            while true {
                let page = try await server.request("GET", path)
                #expect(page.status == 200)
                pages += 1
                seen += (page.json["rooms"] as? [[String: Any]] ?? []).compactMap { $0["roomId"] as? String }
                guard let token = page.json["nextPageToken"] as? String else { break }
                path = "/v1/rooms?pageSize=2&pageToken=\(token)"
            }
            #expect(pages == 3)
            #expect(seen == ["p0", "p1", "p2", "p3", "p4"])
            let badToken = try await server.request("GET", "/v1/rooms?pageToken=xyz")
            #expect(badToken.status == 400 && badToken.errorCode == "invalidPageToken")
            let badSize = try await server.request("GET", "/v1/rooms?pageSize=0")
            #expect(badSize.status == 400 && badSize.errorCode == "invalidPageSize")
            #expect(try await server.request("GET", "/v1/rooms?pageSize=201").status == 400)
        }
    }

    @Test func errorStatusesAndBodies() async throws {
        try await TestServer.with { server in
            let unknown = try await server.request("GET", "/v1/nothing")
            #expect(unknown.status == 404 && unknown.errorCode == "notFound")
            #expect(unknown.header("content-type")?.hasPrefix("application/json") == true)

            let method = try await server.request("PUT", "/v1/rooms")
            #expect(method.status == 405 && method.errorCode == "methodNotAllowed")
            #expect(method.header("allow") == "GET, POST")

            let media = try await server.request("POST", "/v1/rooms", body: Data("roomId=x".utf8),
                                                 headers: ["Content-Type": "application/x-www-form-urlencoded"])
            #expect(media.status == 415 && media.errorCode == "unsupportedMediaType")

            let malformed = try await server.request("POST", "/v1/rooms", body: Data("{\"roomId\":".utf8),
                                                     headers: ["Content-Type": "application/json"])
            #expect(malformed.status == 400 && malformed.errorCode == "invalidJson")

            let wrongType = try await server.request("POST", "/v1/rooms", json: ["maxParticipants": "many"])
            #expect(wrongType.status == 400 && wrongType.errorCode == "invalidJson")

            let huge = try await server.request("POST", "/v1/rooms", body: Data(repeating: 0x20, count: 2 << 20),
                                                headers: ["Content-Type": "application/json"])
            #expect(huge.status == 413 && huge.errorCode == "payloadTooLarge")
        }
    }

    @Test func drainingRefusesNewRoomsAndFailsReadiness() async throws {
        try await TestServer.with { server in
            server.api.beginDraining()
            let ready = try await server.request("GET", "/readyz", auth: nil)
            #expect(ready.status == 503 && ready.errorCode == "draining")
            let create = try await server.request("POST", "/v1/rooms", json: ["roomId": "late"])
            #expect(create.status == 503 && create.errorCode == "draining")
            #expect(create.header("retry-after") != nil)
            #expect(try await server.request("GET", "/healthz", auth: nil).status == 200)
            #expect(ready.header("retry-after") != nil)
        }
    }

    @Test func rateLimitAnswers429() async throws {
        // A hundredth of a request a second, a burst of one: a token comes back every 100 s, so
        // the test holds however slowly a busy machine runs the requests (at 2 a second, ten
        // requests taking 3 s had refilled the bucket; at half a request a second, the whole
        // Swift suite running at once made four requests take 46 s).
        try await TestServer.with(rateLimit: 0.01) { server in
            var statuses: [Int] = []
            for _ in 0..<3 {
                statuses.append(try await server.request("GET", "/healthz", auth: nil).status)
            }
            #expect(statuses.first == 200)
            #expect(statuses.contains(429))
            let limited = try await server.request("GET", "/v1/rooms")
            #expect(limited.status == 429 && limited.errorCode == "rateLimited")
            #expect(limited.header("retry-after") == "100")
        }
    }
}
