import Auth
import ChorusCore
import Foundation
import Hummingbird
import Rooms
import SRTP
import Webhooks

struct ForwarderRequestBody: Decodable {
    var host: String
    var port: Int
    var payloadType: Int?
    var ssrc: UInt32?
    var srtp: SRTPKeyBody?

    struct SRTPKeyBody: Decodable {
        /// "AES_CM_128_HMAC_SHA1_80" or "AEAD_AES_128_GCM".
        var profile: String
        /// Base64 of the master key ‖ salt (30 or 28 bytes).
        var key: String
    }
}

/// A forward as the API shows it.
struct ForwarderResponse: Encodable {
    var forwarderId: String
    var address: String
    var port: Int
    var payloadType: Int
    var ssrc: UInt32
    var srtp: Bool
    var packetsSent: UInt64

    init(_ snapshot: ForwarderSnapshot) {
        forwarderId = snapshot.id
        address = snapshot.destination.host
        port = Int(snapshot.destination.port)
        payloadType = Int(snapshot.payloadType)
        ssrc = snapshot.ssrc
        srtp = snapshot.secure
        packetsSent = snapshot.packets
    }
}

extension ControlAPI {
    static let forwarderNotFound = APIError(.notFound, "forwarderNotFound", "no forward with this forwarderId in this room")

    /// `/v1/rooms/{roomId}/forwarders`: the room's full mix as RTP to a host and port, while the
    /// room runs (application credentials; destinations under the webhooks' address policy).
    func addForwarderRoutes(_ group: RouterGroup<ChorusRequestContext>, _ routes: inout RouteTable) {
        group.route(&routes, .post, "/v1/rooms/{roomId}/forwarders") { request, context in
            var request = request
            let app = try context.requireApplication()
            let roomId = try context.parameter("roomId", RoomID.init(validating:))
            guard let body = try await JSONBody.decode(ForwarderRequestBody.self, &request) else {
                throw APIError.badRequest("missingBody", "this request needs a JSON body with host and port")
            }
            let room = try await self.existingRoom(app, roomId, placing: true)
            let forward = try await self.forwarderRequest(body)
            do {
                try await room.addForwarder(forward)
            } catch {
                throw APIError(.conflict, "forwarderRefused", "the forward could not start: \(error)")
            }
            let snapshot = await room.forwarders.first { $0.id == forward.id }
            guard let snapshot else { throw Self.forwarderNotFound }
            return JSONBody.response(ForwarderResponse(snapshot), status: .created,
                                     headers: [.location: "/v1/rooms/\(roomId.rawValue)/forwarders/\(forward.id)"])
        }
        group.route(&routes, .get, "/v1/rooms/{roomId}/forwarders") { _, context in
            let app = try context.requireApplication()
            let roomId = try context.parameter("roomId", RoomID.init(validating:))
            let room = try await self.existingRoom(app, roomId)
            return JSONBody.response(["forwarders": await room.forwarders.map(ForwarderResponse.init)])
        }
        group.route(&routes, .delete, "/v1/rooms/{roomId}/forwarders/{forwarderId}") { _, context in
            let app = try context.requireApplication()
            let roomId = try context.parameter("roomId", RoomID.init(validating:))
            let room = try await self.existingRoom(app, roomId)
            guard await room.removeForwarder(id: context.parameters.get("forwarderId") ?? "") else {
                throw Self.forwarderNotFound
            }
            return Response(status: .noContent)
        }
    }

    private func forwarderRequest(_ body: ForwarderRequestBody) async throws -> ForwarderRequest {
        guard configuration.outboundEnabled else {
            throw APIError(.conflict, "forwarderRefused", "this node sends nothing outbound (--outbound off)")
        }
        guard (1...65_535).contains(body.port) else {
            throw APIError.badRequest("invalidForwarder", "port must be 1-65535")
        }
        let payloadType = body.payloadType ?? 111
        guard (96...127).contains(payloadType) else {
            throw APIError.badRequest("invalidForwarder", "payloadType must be a dynamic payload type, 96-127")
        }
        guard body.host.utf8.count <= 253, !body.host.isEmpty else {
            throw APIError.badRequest("invalidForwarder", "host must be a name or an address")
        }
        let resolved: ResolvedAddress
        switch await outboundPolicy.resolve(body.host, port: body.port) {
        case .success(let addresses):
            guard let first = addresses.first(where: { $0.bytes.count == 4 }) ?? addresses.first else {
                throw APIError.badRequest("forwarderNotAllowed", "\(body.host) has no address")
            }
            resolved = first
        case .failure(let refusal):
            throw APIError.badRequest("forwarderNotAllowed", refusal.description)
        }
        guard let destination = TransportAddress(bytes: resolved.bytes, port: UInt16(body.port)) else {
            throw APIError.badRequest("forwarderNotAllowed", "\(resolved.text) is not a usable address")
        }
        return ForwarderRequest(id: "fwd_" + SecureRandom.hex(8), destination: destination, payloadType: UInt8(payloadType),
                                ssrc: body.ssrc ?? UInt32.random(in: 1...UInt32.max), srtp: try Self.srtpKeys(body.srtp))
    }

    static func srtpKeys(_ body: ForwarderRequestBody.SRTPKeyBody?) throws -> SRTPKeyingMaterial? {
        guard let body else { return nil }
        let profile: SRTPProtectionProfile
        switch body.profile {
        case "AES_CM_128_HMAC_SHA1_80": profile = .aes128CMHMACSHA1_80
        case "AEAD_AES_128_GCM": profile = .aeadAES128GCM
        default:
            throw APIError.badRequest("invalidForwarder", "srtp.profile must be AES_CM_128_HMAC_SHA1_80 or AEAD_AES_128_GCM")
        }
        guard let key = Base64.decode(body.key), key.count == profile.keyLength + profile.saltLength else {
            throw APIError.badRequest("invalidForwarder",
                                      "srtp.key must be base64 of the master key and salt (\(profile.keyLength + profile.saltLength) bytes)")
        }
        // Only the sending direction is used.
        return SRTPKeyingMaterial(profile: profile, local: key, remote: key)
    }
}
