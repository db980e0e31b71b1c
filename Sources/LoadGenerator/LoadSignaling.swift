import Auth
import ChorusCore
import Foundation

/// How the generator reaches a server's control plane: create the rooms, join one simulated
/// participant with its SDP offer and get the answer, hang it up, and clean up. The media side
/// (ICE, DTLS, SRTP, RTP) is the same for every server; only this seam differs between Chorus
/// (`ChorusSignaling`, its REST API) and Janus (`JanusSignaling`, its HTTP API), so the two
/// are measured by one client in one way.
protocol LoadSignaling: Sendable {
    /// Creates `count` rooms for `participants` each (with `videoSlots` slots when > 0).
    func createRooms(count: Int, participants: Int, videoSlots: Int) async throws
    /// Joins `userId` to room `room` with `offer`; returns the answer and how to hang up.
    func join(room: Int, userId: String, offer: String) async throws -> LoadJoin
    /// After everyone left: rooms and sessions the run made are removed where the server keeps them.
    func finish() async
}

/// One joined participant as the signalling knows it: the SDP answer and its hang-up.
struct LoadJoin: Sendable {
    var answer: String
    var hangUp: @Sendable () async -> Void
}

/// Chorus's REST API: rooms created with the application's key and secret (Basic), users
/// registered with the Sinch signature, a join per participant with its own access token,
/// and a DELETE of its call to hang up.
struct ChorusSignaling: LoadSignaling {
    let http: LoadHTTP
    let appKey: String
    let appSecret: String
    let runID: String

    func roomID(_ room: Int) -> String { "load-\(runID)-\(room)" }

    func createRooms(count: Int, participants: Int, videoSlots: Int) async throws {
        let auth = LoadHTTP.basic(key: appKey, secret: appSecret)
        for room in 0..<count {
            let reply = try await http.request("POST", "/v1/rooms", json: [
                "roomId": roomID(room), "maxParticipants": max(participants, 1), "mixedSpeakers": 3,
                "videoSlots": videoSlots,
            ], authorization: auth)
            guard reply.status == 201 || reply.status == 409 else {
                throw LoadHTTP.Failure(description: "creating room \(roomID(room)): HTTP \(reply.status) "
                    + String(decoding: reply.body, as: UTF8.self))
            }
        }
    }

    func join(room: Int, userId: String, offer: String) async throws -> LoadJoin {
        let token = try await register(userId)
        let reply = try await http.request("POST", "/v1/rooms/\(roomID(room))/participants", json: ["sdp": offer],
                                           authorization: "Bearer \(token)")
        guard reply.status == 201, let body = reply.json, let sdp = body["sdp"] as? String,
              let callId = body["callId"] as? String
        else {
            throw LoadHTTP.Failure(description: "join: HTTP \(reply.status) "
                + String(decoding: reply.body.prefix(200), as: UTF8.self))
        }
        let (http, path) = (http, "/v1/rooms/\(roomID(room))/participants/\(callId)")
        return LoadJoin(answer: sdp) {
            _ = try? await http.request("DELETE", path, authorization: "Bearer \(token)")
        }
    }

    func finish() async {}

    /// POST /v1/users/{userId}/registrations with Base64(SHA1(userId + key + sequence + secret)).
    private func register(_ userId: String) async throws -> String {
        guard let user = try? UserID(validating: userId), let key = try? ApplicationKey(validating: appKey)
        else { throw LoadHTTP.Failure(description: "invalid user ID or application key") }
        let sequence = RegistrationSequence(UInt64(Date().timeIntervalSince1970 * 1_000))
        let signature = RegistrationSignature.sign(userId: user, applicationKey: key, sequence: sequence,
                                                   applicationSecret: appSecret)
        let reply = try await http.request("POST", "/v1/users/\(userId)/registrations", json: [
            "applicationKey": appKey, "sequence": sequence.decimal, "signature": signature,
        ])
        guard reply.status == 201, let token = reply.json?["accessToken"] as? String else {
            throw LoadHTTP.Failure(description: "registration: HTTP \(reply.status)")
        }
        return token
    }
}
