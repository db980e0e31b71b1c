import Auth
import Foundation
import Testing

@Suite("REST: authentication and registration")
struct AuthAPITests {
    func signed(_ server: TestServer, method: String, path: String, body: Data = Data(), contentType: String = "",
                timestamp: Date? = nil, secret: String = TestServer.appSecret) -> [String: String] {
        let formatter = ISO8601DateFormatter()
        let stamp = formatter.string(from: timestamp ?? server.clock.now)
        let signature = ApplicationRequestSignature(method: method, body: Array(body), contentType: contentType,
                                                    timestamp: stamp, path: path).signature(secret: secret) ?? ""
        var headers = ["Authorization": "Application \(TestServer.appKey):\(signature)", "x-timestamp": stamp]
        if !contentType.isEmpty { headers["Content-Type"] = contentType }
        return headers
    }

    @Test func basicAuthentication() async throws {
        try await TestServer.with { server in
            #expect(try await server.request("GET", "/v1/rooms").status == 200)
            let none = try await server.request("GET", "/v1/rooms", auth: nil)
            #expect(none.status == 401 && none.errorCode == "missingCredentials")
            #expect(none.header("www-authenticate")?.contains("Basic") == true)
            let wrongSecret = "Basic " + Data("\(TestServer.appKey):AAAAAAAAAAAAAAAAAAAAAA==".utf8).base64EncodedString()
            let bad = try await server.request("GET", "/v1/rooms", auth: wrongSecret)
            #expect(bad.status == 401 && bad.errorCode == "invalidCredentials")
            let unknownKey = "Basic " + Data("00000000-0000-4000-8000-000000000000:x".utf8).base64EncodedString()
            #expect(try await server.request("GET", "/v1/rooms", auth: unknownKey).errorCode == "invalidCredentials")
            let garbage = try await server.request("GET", "/v1/rooms", auth: "Basic !!!")
            #expect(garbage.status == 401 && garbage.errorCode == "malformedAuthorization")
            let scheme = try await server.request("GET", "/v1/rooms", auth: "Digest abc")
            #expect(scheme.status == 401 && scheme.errorCode == "unsupportedAuthorization")
        }
    }

    @Test func signedApplicationRequests() async throws {
        try await TestServer.with { server in
            let body = Data(#"{"roomId":"signed"}"#.utf8)
            let good = signed(server, method: "POST", path: "/v1/rooms", body: body, contentType: "application/json")
            let created = try await server.request("POST", "/v1/rooms", body: body, headers: good, auth: nil)
            #expect(created.status == 201)

            let list = signed(server, method: "GET", path: "/v1/rooms?pageSize=1")
            #expect(try await server.request("GET", "/v1/rooms?pageSize=1", headers: list, auth: nil).status == 200)
            // The query is signed: changing it breaks the signature.
            let moved = try await server.request("GET", "/v1/rooms?pageSize=2", headers: list, auth: nil)
            #expect(moved.status == 401 && moved.errorCode == "invalidSignature")

            let wrong = signed(server, method: "POST", path: "/v1/rooms", body: body, contentType: "application/json",
                               secret: "AAAAAAAAAAAAAAAAAAAAAA==")
            let refused = try await server.request("POST", "/v1/rooms", body: body, headers: wrong, auth: nil)
            #expect(refused.status == 401 && refused.errorCode == "invalidSignature")

            // Body changed after signing: Content-MD5 no longer matches.
            let tampered = try await server.request("POST", "/v1/rooms", body: Data(#"{"roomId":"other"}"#.utf8),
                                                    headers: good, auth: nil)
            #expect(tampered.status == 401 && tampered.errorCode == "invalidSignature")

            let stale = signed(server, method: "GET", path: "/v1/rooms",
                               timestamp: server.clock.now.addingTimeInterval(-16 * 60))
            let old = try await server.request("GET", "/v1/rooms", headers: stale, auth: nil)
            #expect(old.status == 401 && old.errorCode == "staleTimestamp")

            var noStamp = signed(server, method: "GET", path: "/v1/rooms")
            noStamp["x-timestamp"] = nil
            #expect(try await server.request("GET", "/v1/rooms", headers: noStamp, auth: nil).errorCode
                    == "missingTimestamp")
        }
    }

    @Test func registrationKnownAnswerAndReplay() async throws {
        try await TestServer.with { server in
            func register(_ sequence: Any, _ signature: String, user: String = "alice") async throws -> TestServer.Reply {
                try await server.request("POST", "/v1/users/\(user)/registrations",
                                         json: ["applicationKey": TestServer.appKey, "sequence": sequence,
                                                "signature": signature], auth: nil)
            }
            // Signature computed independently (Python hashlib) for alice, sequence 42.
            let first = try await register(42, "MmwqsXMB9NhTKxG1XKx15q/GZBc=")
            #expect(first.status == 201)
            #expect(first.json["userId"] as? String == "alice")
            #expect((first.json["accessToken"] as? String)?.split(separator: ".").count == 3)
            let expires = ISO8601DateFormatter().date(from: first.json["expiresAt"] as? String ?? "")
            #expect(abs((expires?.timeIntervalSince(server.clock.now) ?? 0) - 24 * 3600) < 2)

            let replay = try await register("42", "MmwqsXMB9NhTKxG1XKx15q/GZBc=")
            #expect(replay.status == 409 && replay.errorCode == "sequenceReplayed")
            let sign = { (seq: UInt64) in
                RegistrationSignature.sign(userId: try! .init(validating: "alice"),
                                           applicationKey: try! .init(validating: TestServer.appKey),
                                           sequence: RegistrationSequence(seq), applicationSecret: TestServer.appSecret)
            }
            let lower = try await register("41", sign(41))
            #expect(lower.status == 409 && lower.errorCode == "sequenceReplayed")
            #expect(try await register("43", sign(43)).status == 201)

            let forged = try await register("44", sign(45))
            #expect(forged.status == 401 && forged.errorCode == "invalidSignature")
            // A refused signature does not consume the sequence.
            #expect(try await register("44", sign(44)).status == 201)
        }
    }

    @Test func registrationInputErrors() async throws {
        try await TestServer.with { server in
            let badUser = try await server.request("POST", "/v1/users/a.b/registrations",
                                                   json: ["applicationKey": TestServer.appKey, "sequence": "1",
                                                          "signature": "x"], auth: nil)
            #expect(badUser.status == 400 && badUser.errorCode == "invalidUserId")
            let long = String(repeating: "u", count: 256)
            #expect(try await server.request("POST", "/v1/users/\(long)/registrations",
                                             json: ["applicationKey": TestServer.appKey, "sequence": "1",
                                                    "signature": "x"], auth: nil).errorCode == "invalidUserId")
            let badSeq = try await server.request("POST", "/v1/users/alice/registrations",
                                                  json: ["applicationKey": TestServer.appKey, "sequence": "007",
                                                         "signature": "x"], auth: nil)
            #expect(badSeq.status == 400 && badSeq.errorCode == "invalidSequence")
            let negative = try await server.request("POST", "/v1/users/alice/registrations",
                                                    json: ["applicationKey": TestServer.appKey, "sequence": -1,
                                                           "signature": "x"], auth: nil)
            #expect(negative.status == 400)
            let badKey = try await server.request("POST", "/v1/users/alice/registrations",
                                                  json: ["applicationKey": "KEY", "sequence": "1", "signature": "x"],
                                                  auth: nil)
            #expect(badKey.status == 400 && badKey.errorCode == "invalidApplicationKey")
            let missing = try await server.request("POST", "/v1/users/alice/registrations",
                                                   json: ["applicationKey": TestServer.appKey], auth: nil)
            #expect(missing.status == 400 && missing.errorCode == "invalidJson")
            let text = try await server.request("POST", "/v1/users/alice/registrations", body: Data("hi".utf8),
                                                headers: ["Content-Type": "text/plain"], auth: nil)
            #expect(text.status == 415)
        }
    }

    @Test func bearerTokens() async throws {
        try await TestServer.with { server in
            let token = try await server.register("alice", sequence: 1)
            let mine = try await server.request("GET", "/v1/calls", auth: "Bearer \(token)")
            #expect(mine.status == 200)
            let rooms = try await server.request("POST", "/v1/rooms", json: [:], auth: "Bearer \(token)")
            #expect(rooms.status == 403 && rooms.errorCode == "applicationAuthRequired")

            var parts = token.split(separator: ".").map(String.init)
            parts[1] = Base64.urlEncode(Array(#"{"app":"x","exp":9999999999,"iat":0,"iss":"chorus","jti":"j","sub":"bob"}"#.utf8))
            let tampered = try await server.request("GET", "/v1/calls", auth: "Bearer " + parts.joined(separator: "."))
            #expect(tampered.status == 401 && tampered.errorCode == "invalidToken")
            let junk = try await server.request("GET", "/v1/calls", auth: "Bearer junk")
            #expect(junk.status == 401 && junk.errorCode == "invalidToken")

            server.clock.advance(24 * 3600 + 1)
            let expired = try await server.request("GET", "/v1/calls", auth: "Bearer \(token)")
            #expect(expired.status == 401 && expired.errorCode == "tokenExpired")
        }
    }
}
