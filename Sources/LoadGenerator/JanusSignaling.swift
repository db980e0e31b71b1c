import Foundation

/// Janus's HTTP API (janus.plugin.audiobridge; janus.plugin.videoroom for video, in
/// `JanusSignaling+VideoRoom`), for the side-by-side runs: the same simulated participants and
/// media as against Chorus, joined the way a Janus application joins them.
///
/// One Janus session carries the run: a control handle creates the 48 kHz AudioBridge rooms,
/// and each participant gets a handle of its own (one PeerConnection each, as Janus needs)
/// whose `join` carries the SDP offer. The answer comes asynchronously on the session's long
/// poll, matched by transaction; a keepalive every 20 s holds the session (Janus drops it
/// after 60 s without one, long poll or not). Hang-up detaches the handle; `finish` destroys the
/// rooms and the session.
actor JanusSignaling: LoadSignaling {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let http: LoadHTTP
    /// AudioBridge `default_prebuffering` for the run's rooms, in 20 ms packets; nil keeps
    /// Janus's default (6 packets, 120 ms). The capacity search also runs Janus with 2, Chorus's
    /// 40 ms jitter-buffer start, so that its latency is compared on equal terms.
    let prebufferPackets: Int?
    /// Room numbers of this run (AudioBridge and VideoRoom alike): a random base plus the room's
    /// index, so concurrent runs do not collide.
    let roomBase: UInt64
    private var session: UInt64?
    private var control: UInt64?
    private var rooms: [UInt64] = []
    /// The VideoRoom control handle and rooms, with `--video` (`JanusSignaling+VideoRoom`).
    var videoControl: UInt64?
    var videoRooms: [UInt64] = []
    /// Joins waiting for their event (transaction → continuation with the event's JSON).
    private var waiting: [String: CheckedContinuation<Data, any Error>] = [:]
    private var poller: Task<Void, Never>?
    private var keeper: Task<Void, Never>?
    private var transactions = 0

    init(http: LoadHTTP, prebufferPackets: Int? = nil) {
        self.http = http
        self.prebufferPackets = prebufferPackets
        roomBase = UInt64(UInt32.random(in: 1_000_000...UInt32.max)) << 8
    }

    func createRooms(count: Int, participants: Int, videoSlots: Int) async throws {
        let session = try await openSession()
        let control = try await attach(session: session)
        self.control = control
        for index in 0..<count {
            let room = roomBase + UInt64(index)
            // 48 kHz as a WebRTC client sends; everything else stays Janus's default (Opus
            // complexity 4 per participant, 20 ms frames, prebuffering of 6 packets) unless the
            // run sets the prebuffering.
            var body: [String: Any] = ["request": "create", "room": room, "sampling_rate": 48_000,
                                       "audiolevel_ext": true, "permanent": false]
            if let prebufferPackets { body["default_prebuffering"] = prebufferPackets }
            let reply = try await post("/janus/\(session)/\(control)", ["janus": "message", "body": body])
            guard Self.pluginData(reply)?["audiobridge"] as? String == "created" else {
                throw Failure(description: "Janus AudioBridge create: \(Self.text(reply))")
            }
            rooms.append(room)
        }
        if videoSlots > 0 { try await createVideoRooms(count: count, participants: participants) }
    }

    func join(room: Int, userId: String, offer: String) async throws -> LoadJoin {
        let (session, handle) = try await attachHandle(plugin: Self.audioBridge)
        let event = try await request(session: session, handle: handle, [
            "request": "join", "room": roomBase + UInt64(room), "display": userId, "muted": false,
        ], jsep: ["type": "offer", "sdp": offer, "trickle": false])
        guard let answer = Self.sdp(in: event) else {
            throw Failure(description: "Janus join without an answer: \(Self.text(event))")
        }
        return LoadJoin(answer: answer, hangUp: detacher(session: session, handle: handle))
    }

    /// Hangs up a handle: detaching closes its PeerConnection.
    func detacher(session: UInt64, handle: UInt64) -> @Sendable () async -> Void {
        let http = http
        return {
            _ = try? await http.request("POST", "/janus/\(session)/\(handle)", json: [
                "janus": "detach", "transaction": "bye-\(handle)",
            ])
        }
    }

    /// Sends a plugin message that Janus answers asynchronously (an `ack`, then an event with
    /// the same transaction on the long poll) and returns that event. A plugin error is thrown.
    func request(session: UInt64, handle: UInt64, _ body: [String: Any], jsep: [String: Any]? = nil)
        async throws -> [String: Any]
    {
        let transaction = nextTransaction()
        var message: [String: Any] = ["janus": "message", "transaction": transaction, "body": body]
        if let jsep { message["jsep"] = jsep }
        let bytes = try JSONSerialization.data(withJSONObject: message)
        let event: Data = try await withCheckedThrowingContinuation { continuation in
            waiting[transaction] = continuation
            Task {
                do {
                    let reply = try await self.post("/janus/\(session)/\(handle)", body: bytes)
                    if reply["janus"] as? String != "ack" { self.fail(transaction, "\(body["request"] ?? "?"): \(Self.text(reply))") }
                } catch {
                    self.fail(transaction, "\(body["request"] ?? "?"): \(error)")
                }
            }
        }
        let json = (try? JSONSerialization.jsonObject(with: event)) as? [String: Any] ?? [:]
        if let error = Self.pluginData(json)?["error"] { throw Failure(description: "Janus: \(error)") }
        if json["janus"] as? String == "error" { throw Failure(description: "Janus: \(Self.text(json))") }
        return json
    }

    func finish() async {
        guard let session else { return }
        await destroyVideoRooms(session: session)
        if let control {
            for room in rooms {
                _ = try? await post("/janus/\(session)/\(control)", [
                    "janus": "message", "body": ["request": "destroy", "room": room] as [String: Any],
                ])
            }
        }
        _ = try? await post("/janus/\(session)", ["janus": "destroy"])
        poller?.cancel()
        keeper?.cancel()
        self.session = nil
        for (_, continuation) in waiting { continuation.resume(throwing: Failure(description: "session closed")) }
        waiting = [:]
    }

    // MARK: Session, handles, long poll

    private func openSession() async throws -> UInt64 {
        let reply = try await post("/janus", ["janus": "create"])
        guard let id = Self.id(in: reply) else { throw Failure(description: "Janus create: \(Self.text(reply))") }
        session = id
        poller = Task { await self.poll(session: id) }
        keeper = Task { await self.keepAlive(session: id) }
        return id
    }

    static let audioBridge = "janus.plugin.audiobridge"
    static let videoRoom = "janus.plugin.videoroom"

    func attach(session: UInt64, plugin: String = audioBridge) async throws -> UInt64 {
        let reply = try await post("/janus/\(session)", ["janus": "attach", "plugin": plugin])
        guard let id = Self.id(in: reply) else { throw Failure(description: "Janus attach: \(Self.text(reply))") }
        return id
    }

    /// A new handle on the run's session (one PeerConnection each).
    func attachHandle(plugin: String) async throws -> (session: UInt64, handle: UInt64) {
        guard let session else { throw Failure(description: "no Janus session") }
        return (session, try await attach(session: session, plugin: plugin))
    }

    /// Long-polls the session's events until it is closed, handing each join its answer.
    private func poll(session: UInt64) async {
        var failures = 0
        while !Task.isCancelled, self.session == session {
            do {
                // Janus answers a long poll after at most 30 s (a keepalive event when idle).
                let reply = try await http.request("GET", "/janus/\(session)?maxev=64", timeout: 45)
                failures = 0
                let parsed = try? JSONSerialization.jsonObject(with: reply.body)
                let events = parsed as? [[String: Any]] ?? (parsed as? [String: Any]).map { [$0] } ?? []
                for event in events { deliver(event) }
            } catch {
                failures += 1
                if failures > 5 { break }
                try? await Task.sleep(nanoseconds: 200_000_000)
            }
        }
    }

    /// A keepalive every 20 s: a long poll alone does not keep a Janus session alive.
    private func keepAlive(session: UInt64) async {
        while !Task.isCancelled, self.session == session {
            try? await Task.sleep(nanoseconds: 20_000_000_000)
            guard !Task.isCancelled, self.session == session else { return }
            _ = try? await post("/janus/\(session)", ["janus": "keepalive"])
        }
    }

    private func deliver(_ event: [String: Any]) {
        guard let transaction = event["transaction"] as? String, let continuation = waiting[transaction] else { return }
        let kind = event["janus"] as? String
        // The join's result: an event with the answer, or an error event from the plugin.
        guard kind == "event" || kind == "error" else { return }
        waiting[transaction] = nil
        if let data = try? JSONSerialization.data(withJSONObject: event) {
            continuation.resume(returning: data)
        } else {
            continuation.resume(throwing: Failure(description: "unreadable Janus event"))
        }
    }

    private func fail(_ transaction: String, _ reason: String) {
        waiting.removeValue(forKey: transaction)?.resume(throwing: Failure(description: reason))
    }

    private func nextTransaction() -> String {
        transactions += 1
        return "t\(transactions)"
    }

    /// POSTs one request (with a fresh transaction unless given) and returns its JSON reply.
    func post(_ path: String, _ body: [String: Any]) async throws -> [String: Any] {
        var body = body
        if body["transaction"] == nil { body["transaction"] = nextTransaction() }
        return try await post(path, body: try JSONSerialization.data(withJSONObject: body))
    }

    private func post(_ path: String, body: Data) async throws -> [String: Any] {
        let reply = try await http.request("POST", path, body: body)
        guard reply.status == 200, let json = reply.json else {
            throw Failure(description: "Janus \(path): HTTP \(reply.status) \(String(decoding: reply.body.prefix(200), as: UTF8.self))")
        }
        if json["janus"] as? String == "error" { throw Failure(description: "Janus \(path): \(Self.text(json))") }
        return json
    }

    static func pluginData(_ event: [String: Any]) -> [String: Any]? {
        (event["plugindata"] as? [String: Any])?["data"] as? [String: Any]
    }

    static func sdp(in event: [String: Any]) -> String? {
        (event["jsep"] as? [String: Any])?["sdp"] as? String
    }

    static func id(in reply: [String: Any]) -> UInt64? {
        guard let data = reply["data"] as? [String: Any] else { return nil }
        return (data["id"] as? NSNumber)?.uint64Value
    }

    static func text(_ json: [String: Any]) -> String {
        (try? JSONSerialization.data(withJSONObject: json)).map { String(decoding: $0.prefix(300), as: UTF8.self) } ?? "?"
    }
}
