import ChorusCore
import Foundation
import HTTPTypes
import Hummingbird
import ICELite
import Rooms
import SDP

extension ControlAPI {
    /// `PATCH /v1/rooms/{roomId}/participants/{callId}`:
    /// - `application/trickle-ice-sdpfrag` (WHIP, RFC 9725 §4.3): new ICE credentials restart
    ///   ICE and get ours back in a fragment (200); the same credentials trickle candidates,
    ///   which an ICE-lite server does not need (204).
    /// - JSON: `audioMuted`, `videoPaused`, `pinned`, and `sdp`: a re-offer, which with new ICE
    ///   credentials restarts ICE; the participant comes back with the answer in `sdp`.
    func patchParticipant(_ request: inout Request, _ context: ChorusRequestContext) async throws -> Response {
        let (room, callId) = try await ownParticipant(context)
        if Self.isSDPFragment(request.headers[.contentType]) {
            return try await restartFromFragment(&request, room: room, callId: callId)
        }
        guard let patch = try await JSONBody.decode(ParticipantPatch.self, &request, limit: Self.maxJoinBodyBytes) else {
            throw APIError.badRequest("missingBody", "this request needs a JSON body")
        }
        let pinned = try patch.pinnedCalls()
        var slotHeights: [SlotHeight]?
        if patch.slots != nil {
            guard let snapshot = await room.participant(callId) else { throw APIError.participantNotFound }
            slotHeights = try patch.slotHeights(mids: snapshot.slots.map(\.mid))
        }
        var answer: String?
        if let offer = patch.sdp {
            guard offer.utf8.count <= Self.maxOfferBytes else { throw APIError.payloadTooLarge(limit: Self.maxOfferBytes) }
            do {
                answer = try await room.renegotiate(callId, offer: offer).sdp
            } catch {
                throw Self.apiError(error)
            }
        }
        guard let snapshot = await room.update(
            callId, audioMuted: patch.audioMuted, videoPaused: patch.videoPaused, pinned: pinned, slotHeights: slotHeights)
        else { throw APIError.participantNotFound }
        var body = ParticipantResponse(snapshot)
        body.sdp = answer
        return JSONBody.response(body)
    }

    private func restartFromFragment(_ request: inout Request, room: Room, callId: CallID) async throws -> Response {
        let bytes = try await JSONBody.bytes(&request, limit: TrickleICEFragment.maximumBytes)
        guard let text = String(validating: bytes.readableBytesView, as: UTF8.self) else {
            throw APIError.badRequest("invalidFragment", "the fragment must be UTF-8 text")
        }
        let fragment: TrickleICEFragment
        do {
            fragment = try TrickleICEFragment(parsing: text)
        } catch {
            throw APIError.badRequest("invalidFragment", error.message)
        }
        guard let ufrag = fragment.iceUfrag, let pwd = fragment.icePwd,
              let remote = try? ICECredentials(ufrag: ufrag, password: pwd)
        else { return Response(status: .noContent) }  // candidates only: nothing to do for ICE-lite
        let answer: RestartAnswer
        do {
            answer = try await room.restartICE(callId, remote: remote)
        } catch {
            throw Self.apiError(error)
        }
        guard answer.restarted else { return Response(status: .noContent) }
        var lines = ["a=ice-ufrag:\(answer.ufrag)", "a=ice-pwd:\(answer.password)"]
        lines += answer.sdp.split(whereSeparator: \.isNewline).map(String.init).filter {
            $0.hasPrefix("a=group:BUNDLE") || $0.hasPrefix("a=candidate:")
        }.uniqued()
        lines.append("a=end-of-candidates")
        return Response(status: .ok, headers: [.contentType: "application/trickle-ice-sdpfrag"],
                        body: .init(byteBuffer: ByteBuffer(string: lines.joined(separator: "\r\n") + "\r\n")))
    }

    static func isSDPFragment(_ contentType: String?) -> Bool {
        contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
            == "application/trickle-ice-sdpfrag"
    }

    static func apiError(_ error: RestartError) -> APIError {
        switch error {
        case .noSuchCall: .participantNotFound
        case .offerRejected(let code, let message): APIError(.unprocessableContent, code, message)
        case .fingerprintChanged:
            APIError(.unprocessableContent, "fingerprintChanged",
                     "the offer's DTLS fingerprint differs from the call's: a new association is a new call")
        case .mediaChanged:
            APIError(.unprocessableContent, "mediaChanged",
                     "the offer's media sections differ from the call's; only ICE can be renegotiated")
        case .invalidCredentials:
            APIError(.unprocessableContent, "invalidIceCredentials", "the offer's ICE ufrag or password is invalid")
        }
    }
}

extension Array where Element: Hashable {
    /// The elements in order, each once.
    fileprivate func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
