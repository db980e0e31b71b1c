import Foundation

/// Janus's HTTP API (janus.plugin.audiobridge), for the side-by-side runs: the same simulated
/// participants and media as against Chorus, joined the way a Janus application joins them.
///
/// One Janus session carries the run: a control handle creates the 48 kHz AudioBridge rooms,
/// and each participant gets a handle of its own (one PeerConnection each, as Janus needs)
/// whose `join` carries the SDP offer. The answer comes asynchronously on the session's long
/// poll, matched by transaction; the long poll also keeps the session alive (Janus drops a
/// session after 60 s without a request). Hang-up detaches the handle; `finish` destroys the
/// rooms and the session.
actor JanusSignaling: LoadSignaling {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let http: LoadHTTP
    /// AudioBridge room numbers of this run: a random base, so runs never collide.
    let roomBase: UInt64
    private var session: UInt64?
    private var control: UInt64?
    private var rooms: [UInt64] = []
    /// Joins waiting for their event (transaction → continuation with the event's JSON).
    private var waiting: [String: CheckedContinuation<Data, any Error>] = [:]
    private var poller: Task<Void, Never>?
    private var transactions = 0

    init(http: LoadHTTP, runID: String) {
        self.http = http
        roomBase = UInt64(UInt32.random(in: 1_000_000...UInt32.max)) << 8
    }

    func createRooms(count: Int, participants: Int, videoSlots: Int) async throws {
        let session = try await openSession()
        let control = try await attach(session: session)
        self.control = control
        for index in 0..<count {
            let room = roomBase + UInt64(index)
            // 48 kHz as a WebRTC client sends; everything else stays Janus's default (Opus
            // complexity 4 per participant, 20 ms frames, prebuffering of 6 packets).
            let reply = try await post("/janus/\(session)/\(control)", [
                "janus": "message", "body": ["request": "create", "room": room, "sampling_rate": 48_000,
                                             "audiolevel_ext": true, "permanent": false] as [String: Any],
            ])
            let data = (reply["plugindata"] as? [String: Any])?["data"] as? [String: Any]
            guard data?["audiobridge"] as? String == "created" else {
                throw Failure(description: "Janus AudioBridge create: \(Self.text(reply))")
            }
            rooms.append(room)
        }
    }

    func join(room: Int, userId: String, offer: String) async throws -> LoadJoin {
        guard let session else { throw Failure(description: "no Janus session") }
        let handle = try await attach(session: session)
        let transaction = nextTransaction()
        let event: Data = try await withCheckedThrowingContinuation { continuation in
            waiting[transaction] = continuation
            Task {
                do {
                    let ack = try await self.post("/janus/\(session)/\(handle)", [
                        "janus": "message", "transaction": transaction,
                        "body": ["request": "join", "room": self.roomBase + UInt64(room), "display": userId,
                                 "muted": false] as [String: Any],
                        "jsep": ["type": "offer", "sdp": offer, "trickle": false] as [String: Any],
                    ])
                    if ack["janus"] as? String != "ack" { self.fail(transaction, "join: \(Self.text(ack))") }
                } catch {
                    self.fail(transaction, "join: \(error)")
                }
            }
        }
        let json = (try? JSONSerialization.jsonObject(with: event)) as? [String: Any] ?? [:]
        guard let jsep = json["jsep"] as? [String: Any], let answer = jsep["sdp"] as? String else {
            throw Failure(description: "Janus join without an answer: \(String(decoding: event, as: UTF8.self))")
        }
        let http = http
        return LoadJoin(answer: answer) {
            _ = try? await http.request("POST", "/janus/\(session)/\(handle)", json: [
                "janus": "detach", "transaction": "bye-\(handle)",
            ])
        }
    }

    func finish() async {
        guard let session else { return }
        if let control {
            for room in rooms {
                _ = try? await post("/janus/\(session)/\(control)", [
                    "janus": "message", "body": ["request": "destroy", "room": room] as [String: Any],
                ])
            }
        }
        _ = try? await post("/janus/\(session)", ["janus": "destroy"])
        poller?.cancel()
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
        return id
    }

    private func attach(session: UInt64) async throws -> UInt64 {
        let reply = try await post("/janus/\(session)", ["janus": "attach", "plugin": "janus.plugin.audiobridge"])
        guard let id = Self.id(in: reply) else { throw Failure(description: "Janus attach: \(Self.text(reply))") }
        return id
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
    private func post(_ path: String, _ body: [String: Any]) async throws -> [String: Any] {
        var body = body
        if body["transaction"] == nil { body["transaction"] = nextTransaction() }
        let reply = try await http.request("POST", path, body: try JSONSerialization.data(withJSONObject: body))
        guard reply.status == 200, let json = reply.json else {
            throw Failure(description: "Janus \(path): HTTP \(reply.status) \(String(decoding: reply.body.prefix(200), as: UTF8.self))")
        }
        if json["janus"] as? String == "error" { throw Failure(description: "Janus \(path): \(Self.text(json))") }
        return json
    }

    private static func id(in reply: [String: Any]) -> UInt64? {
        guard let data = reply["data"] as? [String: Any] else { return nil }
        return (data["id"] as? NSNumber)?.uint64Value
    }

    private static func text(_ json: [String: Any]) -> String {
        (try? JSONSerialization.data(withJSONObject: json)).map { String(decoding: $0.prefix(300), as: UTF8.self) } ?? "?"
    }
}
