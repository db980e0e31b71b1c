import Foundation
import Testing

@Suite("REST: calls and statistics")
struct CallAPITests {
    @Test func callAccessRules() async throws {
        try await TestServer.with { server in
            let alice = try await server.register("alice", sequence: 1)
            let bob = try await server.register("bob", sequence: 1)
            let call = try await server.insertCall(user: "alice")
            let path = "/v1/calls/\(call.callId)"

            let byApp = try await server.request("GET", path)
            #expect(byApp.status == 200 && byApp.json["userId"] as? String == "alice")
            #expect(byApp.json["state"] as? String == "progressing")
            #expect(try await server.request("GET", path, auth: "Bearer \(alice)").status == 200)
            let byBob = try await server.request("GET", path, auth: "Bearer \(bob)")
            #expect(byBob.status == 403 && byBob.errorCode == "forbidden")

            let unknown = try await server.request("GET", "/v1/calls/00000000-0000-4000-8000-000000000000")
            #expect(unknown.status == 404 && unknown.errorCode == "callNotFound")
            let invalid = try await server.request("GET", "/v1/calls/not-a-call")
            #expect(invalid.status == 400 && invalid.errorCode == "invalidCallId")
        }
    }

    /// A join's custom headers are checked before the room sees the join: an object of strings,
    /// at most 1,024 bytes of names and values together (the SDK's limit).
    @Test func joinHeadersOverTheLimitOrNotStringsAre400() async throws {
        try await TestServer.with { server in
            func join(_ headers: Any) async throws -> TestServer.Reply {
                try await server.request("POST", "/v1/rooms/r/participants",
                                         json: ["sdp": "v=0", "userId": "u", "headers": headers])
            }
            let number = try await join(["x-count": 3])
            #expect(number.status == 400 && number.errorCode == "invalidHeaders")
            #expect(number.message?.contains("x-count") == true)
            #expect(try await join(["a", "b"]).errorCode == "invalidHeaders")
            #expect(try await join(["": "empty name"]).errorCode == "invalidHeaders")
            let large = try await join(["x-big": String(repeating: "é", count: 510)])  // 5 + 1,020 bytes
            #expect(large.status == 400 && large.errorCode == "headersTooLarge")
            #expect(large.message?.contains("1025 bytes") == true)
            // At the limit, the headers pass and the join goes on to the room (none here: no media).
            let limit = try await join(["x-big": String(repeating: "é", count: 509) + "a"])  // 5 + 1,019 bytes
            #expect(limit.status != 400, "\(limit.json)")
        }
    }

    @Test func callListingFilters() async throws {
        try await TestServer.with { server in
            let alice = try await server.register("alice", sequence: 1)
            _ = try await server.insertCall(user: "alice", room: "r1")
            _ = try await server.insertCall(user: "bob", room: "r1")
            _ = try await server.insertCall(user: "alice", room: "r2")
            func count(_ path: String, auth: String? = TestServer.basic) async throws -> Int {
                let reply = try await server.request("GET", path, auth: auth)
                #expect(reply.status == 200, "\(path)")
                return (reply.json["calls"] as? [Any])?.count ?? -1
            }
            #expect(try await count("/v1/calls") == 3)
            #expect(try await count("/v1/calls?roomId=r1") == 2)
            #expect(try await count("/v1/calls?userId=alice") == 2)
            #expect(try await count("/v1/calls?roomId=r1&userId=bob") == 1)
            #expect(try await count("/v1/calls", auth: "Bearer \(alice)") == 2)
            #expect(try await count("/v1/calls?from=2100-01-01T00:00:00Z") == 0)
            #expect(try await count("/v1/calls?to=2100-01-01T00:00:00Z&pageSize=2") == 2)
            let other = try await server.request("GET", "/v1/calls?userId=bob", auth: "Bearer \(alice)")
            #expect(other.status == 403)
            let badTime = try await server.request("GET", "/v1/calls?from=yesterday")
            #expect(badTime.status == 400 && badTime.errorCode == "invalidTimestamp")
        }
    }

    @Test func statisticsUploadAndListing() async throws {
        try await TestServer.with { server in
            let alice = try await server.register("alice", sequence: 1)
            let call = try await server.insertCall(user: "alice")
            let path = "/v1/calls/\(call.callId)/statistics"
            // A number beyond Double's precision must come back digit for digit.
            let body = Data(#"{"rtt":12.5,"bytes":12345678901234567890123,"codec":"opus","nested":{"a":[1,2]}}"#.utf8)
            let up = try await server.request("POST", path, body: body, headers: ["Content-Type": "application/json"],
                                              auth: "Bearer \(alice)")
            #expect(up.status == 201)
            let id = up.json["statisticsId"] as? String
            #expect(id != nil && up.json["receivedAt"] != nil)

            let listed = try await server.request("GET", path)
            let text = String(decoding: listed.body, as: UTF8.self)
            #expect(listed.status == 200)
            #expect(text.contains("12345678901234567890123"))
            let items = listed.json["statistics"] as? [[String: Any]] ?? []
            #expect(items.count == 1)
            #expect(items.first?["statisticsId"] as? String == id)
            #expect(items.first?["uploadedBy"] as? String == "user:alice")
            #expect((items.first?["data"] as? [String: Any])?["codec"] as? String == "opus")
        }
    }

    @Test func statisticsIdempotencyAndErrors() async throws {
        try await TestServer.with { server in
            let call = try await server.insertCall(user: "alice")
            let bob = try await server.register("bob", sequence: 1)
            let path = "/v1/calls/\(call.callId)/statistics"
            let json = ["Content-Type": "application/json"]
            func post(_ body: String, _ headers: [String: String] = [:], auth: String? = TestServer.basic)
                async throws -> TestServer.Reply
            {
                try await server.request("POST", path, body: Data(body.utf8), headers: json.merging(headers) { $1 },
                                         auth: auth)
            }
            let first = try await post(#"{"a":1}"#, ["Idempotency-Key": "k1"])
            let retry = try await post(#"{"a":1}"#, ["Idempotency-Key": "k1"])
            #expect(first.status == 201 && retry.status == 201)
            #expect(first.json["statisticsId"] as? String == retry.json["statisticsId"] as? String)
            #expect(retry.header("idempotent-replayed") == "true")
            let reused = try await post(#"{"a":2}"#, ["Idempotency-Key": "k1"])
            #expect(reused.status == 422 && reused.errorCode == "idempotencyKeyReused")
            #expect(try await post(#"{"a":1}"#, ["Idempotency-Key": String(repeating: "k", count: 256)]).errorCode
                    == "invalidIdempotencyKey")
            // Lenient parsers accept these; stored verbatim they would break every later listing.
            for lenient in [#"{"a":[1,]}"#, #"{"a":1,}"#, "\u{FEFF}{\"bom\":1}", #"{'a':1}"#, #"{"a":NaN}"#,
                            #"{"a":1} x"#, #"{"a":"\x"}"#, #"{"a":01}"#] {
                #expect(try await post(lenient).errorCode == "invalidJson", "\(lenient)")
            }

            #expect(try await post("[1,2]").errorCode == "notAnObject")
            #expect(try await post("\"text\"").errorCode == "notAnObject")
            #expect(try await post("{broken").errorCode == "invalidJson")
            #expect(try await post("").errorCode == "missingBody")
            // Deep nesting is refused, never a stack overflow.
            #expect(try await post(String(repeating: "[", count: 100_000)).status == 400)
            let big = "{\"x\":\"" + String(repeating: "a", count: 256 * 1024) + "\"}"
            let tooBig = try await post(big)
            #expect(tooBig.status == 413 && tooBig.errorCode == "payloadTooLarge")
            let text = try await server.request("POST", path, body: Data("{}".utf8),
                                                headers: ["Content-Type": "text/plain"])
            #expect(text.status == 415 && text.errorCode == "unsupportedMediaType")
            let byBob = try await post("{}", auth: "Bearer \(bob)")
            #expect(byBob.status == 403)
            let stored = try await server.request("GET", path)
            #expect((stored.json["statistics"] as? [Any])?.count == 1)
        }
    }
}
