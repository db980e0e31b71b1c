import Auth
import ChorusCore
import DTLS
import Foundation
import NIOCore
import NIOPosix

/// Hands each datagram of one participant's socket to it, on the event loop.
final class LoadDatagramHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let participant: LoadParticipant

    init(participant: LoadParticipant) {
        self.participant = participant
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var envelope = unwrapInboundIn(data)
        guard let bytes = envelope.data.readBytes(length: envelope.data.readableBytes) else { return }
        participant.receive(bytes, now: .now())
    }
}

extension LoadRunner {
    /// Joins everyone at the ramp-up rate, a few joins in flight at once, room by room in turn
    /// (so every room fills at the same pace).
    func joinAll(context: DTLSContext, audio: (burst: LoadAudio, speech: LoadAudio, silence: LoadAudio),
                 camera: LoadVideo?) async throws {
        let interval = 1.0 / max(configuration.rampUpPerSecond, 0.1)
        let total = configuration.rooms * configuration.participants
        let timelines = (0..<configuration.rooms).map { _ in RoomTimeline() }
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            var inFlight = 0
            for index in 0..<total {
                let room = index % configuration.rooms
                let position = index / configuration.rooms
                let kind: LoadAudio = position == 0 ? audio.burst : position < configuration.talkers ? audio.speech
                    : audio.silence
                let participant = LoadParticipant(
                    room: room, userId: "load-\(runID)-r\(room)-p\(position)", audio: kind, timeline: timelines[room],
                    isBurstTalker: position == 0 && configuration.talkers > 0,
                    isProbe: position >= configuration.talkers && position < configuration.talkers + configuration.probesPerRoom,
                    dtlsContext: context, video: camera, slots: configuration.slots)
                let talks = position < configuration.talkers
                participant.expectsAudio = configuration.talkers > (talks ? 1 : 0)
                if inFlight >= 8 {
                    try await tasks.next()
                    inFlight -= 1
                }
                tasks.addTask { await self.join(participant) }
                inFlight += 1
                progress("joining \(index + 1)/\(total)")
                try await Task.sleep(nanoseconds: UInt64(interval * 1e9))
            }
            try await tasks.waitForAll()
        }
        // Give the last handshakes a moment before the measured period starts.
        for _ in 0..<50 {
            let pending = try await loop.submit {
                self.participants.filter { $0.phase == .checking || $0.phase == .handshaking }.count
            }.get()
            if pending == 0 { break }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
    }

    /// Registers the user (Sinch signature), opens its socket, joins with an offer, starts ICE.
    func join(_ participant: LoadParticipant) async {
        do {
            let token = try await register(participant.userId)
            let handler = LoadDatagramHandler(participant: participant)
            let channel = try await DatagramBootstrap(group: group)
                .channelInitializer { $0.pipeline.addHandler(handler) }
                .bind(host: "127.0.0.1", port: 0).get()
            guard let port = channel.localAddress?.port else { throw LoadHTTP.Failure(description: "no local port") }
            let started = MediaTime.now()
            let reply = try await http.request(
                "POST", "/v1/rooms/\(roomID(participant.room))/participants",
                json: ["sdp": participant.offer(port: port)], authorization: "Bearer \(token)")
            guard reply.status == 201, let body = reply.json, let sdp = body["sdp"] as? String,
                  let callId = body["callId"] as? String
            else {
                try? await channel.close()
                throw LoadHTTP.Failure(description: "join: HTTP \(reply.status) \(String(decoding: reply.body.prefix(200), as: UTF8.self))")
            }
            let answer = try LoadSDP.parseAnswer(sdp)
            let server = try SocketAddress(ipAddress: answer.host, port: answer.port)
            try await loop.submit {
                participant.joinStartedAt = started
                participant.send = { bytes in
                    var buffer = channel.allocator.buffer(capacity: bytes.count)
                    buffer.writeBytes(bytes)
                    channel.writeAndFlush(AddressedEnvelope(remoteAddress: server, data: buffer), promise: nil)
                }
                self.participants.append(participant)
                self.channels.append(channel)
                self.tokens[ObjectIdentifier(participant)] = (token, callId)
                participant.start(answer, now: .now())
            }.get()
        } catch {
            try? await loop.submit { self.joinFailures.append("\(participant.userId): \(error)") }.get()
        }
    }

    private func register(_ userId: String) async throws -> String {
        guard let user = try? UserID(validating: userId), let key = try? ApplicationKey(validating: configuration.appKey)
        else { throw LoadHTTP.Failure(description: "invalid user ID or application key") }
        let sequence = RegistrationSequence(UInt64(Date().timeIntervalSince1970 * 1_000))
        let signature = RegistrationSignature.sign(userId: user, applicationKey: key, sequence: sequence,
                                                   applicationSecret: configuration.appSecret)
        let reply = try await http.request("POST", "/v1/users/\(userId)/registrations", json: [
            "applicationKey": configuration.appKey, "sequence": sequence.decimal, "signature": signature,
        ])
        guard reply.status == 201, let token = reply.json?["accessToken"] as? String else {
            throw LoadHTTP.Failure(description: "registration: HTTP \(reply.status)")
        }
        return token
    }

    /// Every participant hangs up (DELETE with its own token), a few at a time.
    func leaveAll() async {
        let calls = (try? await loop.submit { self.participants.compactMap { participant in
            self.tokens[ObjectIdentifier(participant)].map { (participant.room, $0.token, $0.callId) }
        } }.get()) ?? []
        await withTaskGroup(of: Void.self) { tasks in
            var inFlight = 0
            for (room, token, callId) in calls {
                if inFlight >= 8 {
                    await tasks.next()
                    inFlight -= 1
                }
                tasks.addTask {
                    _ = try? await self.http.request("DELETE", "/v1/rooms/\(self.roomID(room))/participants/\(callId)",
                                                     authorization: "Bearer \(token)")
                }
                inFlight += 1
            }
        }
    }

    func progress(_ text: String) {
        guard configuration.progress else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K\(text)".utf8))
    }
}
