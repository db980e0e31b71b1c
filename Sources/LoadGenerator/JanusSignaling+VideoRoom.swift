import Foundation

/// Video for a server that carries it outside the participant's own connection, as Janus does:
/// every camera is a publisher connection of its own, and every watched camera a subscriber
/// connection that the server offers and the client answers.
protocol LoadSeparateVideoSignaling: Sendable {
    /// Publishes a camera with `offer` (video only); returns the answer, the hang-up and the
    /// feed others subscribe to.
    func publish(room: Int, userId: String, offer: String) async throws -> (join: LoadJoin, feed: UInt64)
    /// Subscribes to `feeds` on one connection (a multistream subscription: one m-line per
    /// feed): the server's offer, how to send our answer, and the hang-up.
    func subscribe(room: Int, feeds: [UInt64]) async throws -> LoadSubscription
}

/// A subscriber connection the server offered.
struct LoadSubscription: Sendable {
    var offer: String
    var start: @Sendable (_ answer: String) async throws -> Void
    var hangUp: @Sendable () async -> Void
}

/// janus.plugin.videoroom: rooms created beside the AudioBridge ones (same numbers), a
/// publisher handle per participant (`join` as publisher, then `publish` with the offer) and
/// one multistream subscriber handle per participant for all the feeds it watches (`join` as
/// subscriber with a stream per feed, Janus's offer, `start` with our answer), as a Janus 1.x
/// application does: the two plugins and three connections per user that Janus needs for what
/// Chorus carries in one.
extension JanusSignaling: LoadSeparateVideoSignaling {
    func createVideoRooms(count: Int, participants: Int) async throws {
        let (session, control) = try await attachHandle(plugin: Self.videoRoom)
        videoControl = control
        for index in 0..<count {
            let room = roomBase + UInt64(index)
            // VP8 as our camera sends; Janus's defaults otherwise (bitrate cap, FIR frequency).
            let reply = try await post("/janus/\(session)/\(control)", [
                "janus": "message", "body": ["request": "create", "room": room, "publishers": max(participants, 1),
                                             "videocodec": "vp8", "permanent": false] as [String: Any],
            ])
            guard Self.pluginData(reply)?["videoroom"] as? String == "created" else {
                throw Failure(description: "Janus VideoRoom create: \(Self.text(reply))")
            }
            videoRooms.append(room)
        }
    }

    func destroyVideoRooms(session: UInt64) async {
        guard let videoControl else { return }
        for room in videoRooms {
            _ = try? await post("/janus/\(session)/\(videoControl)", [
                "janus": "message", "body": ["request": "destroy", "room": room] as [String: Any],
            ])
        }
        videoRooms = []
    }

    func publish(room: Int, userId: String, offer: String) async throws -> (join: LoadJoin, feed: UInt64) {
        let (session, handle) = try await attachHandle(plugin: Self.videoRoom)
        let joined = try await request(session: session, handle: handle, [
            "request": "join", "ptype": "publisher", "room": roomBase + UInt64(room), "display": userId,
        ])
        guard let feed = (Self.pluginData(joined)?["id"] as? NSNumber)?.uint64Value else {
            throw Failure(description: "Janus VideoRoom join without a publisher id: \(Self.text(joined))")
        }
        let configured = try await request(session: session, handle: handle, ["request": "publish"],
                                           jsep: ["type": "offer", "sdp": offer, "trickle": false])
        guard let answer = Self.sdp(in: configured) else {
            throw Failure(description: "Janus publish without an answer: \(Self.text(configured))")
        }
        return (LoadJoin(answer: answer, hangUp: detacher(session: session, handle: handle)), feed)
    }

    func subscribe(room: Int, feeds: [UInt64]) async throws -> LoadSubscription {
        let (session, handle) = try await attachHandle(plugin: Self.videoRoom)
        let attached = try await request(session: session, handle: handle, [
            "request": "join", "ptype": "subscriber", "room": roomBase + UInt64(room),
            "streams": feeds.map { ["feed": $0] },
        ])
        guard let offer = Self.sdp(in: attached) else {
            throw Failure(description: "Janus subscribe without an offer: \(Self.text(attached))")
        }
        return LoadSubscription(
            offer: offer,
            start: { answer in try await self.start(session: session, handle: handle, answer: answer) },
            hangUp: detacher(session: session, handle: handle))
    }

    /// Sends the subscriber's answer and waits for Janus to confirm (`started`).
    private func start(session: UInt64, handle: UInt64, answer: String) async throws {
        _ = try await request(session: session, handle: handle, ["request": "start"],
                              jsep: ["type": "answer", "sdp": answer, "trickle": false])
    }
}
