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

    /// Opens the participant's socket, joins with an offer (through the target's signalling),
    /// and starts ICE towards the answer's candidate.
    func join(_ participant: LoadParticipant) async {
        do {
            let handler = LoadDatagramHandler(participant: participant)
            let channel = try await DatagramBootstrap(group: group)
                .channelInitializer { $0.pipeline.addHandler(handler) }
                .bind(host: localHost, port: 0).get()
            guard let port = channel.localAddress?.port else { throw LoadHTTP.Failure(description: "no local port") }
            let started = MediaTime.now()
            let joined: LoadJoin
            do {
                joined = try await signaling.join(room: participant.room, userId: participant.userId,
                                                  offer: participant.offer(host: localHost, port: port))
            } catch {
                try? await channel.close()
                throw error
            }
            let answer = try LoadSDP.parseAnswer(joined.answer)
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
                self.hangUps.append(joined.hangUp)
                participant.start(answer, now: .now())
            }.get()
        } catch {
            try? await loop.submit { self.joinFailures.append("\(participant.userId): \(error)") }.get()
        }
    }

    /// Every participant hangs up, a few at a time.
    func leaveAll() async {
        let hangUps = (try? await loop.submit { () -> [@Sendable () async -> Void] in
            for participant in self.participants { participant.leaving = true }
            return self.hangUps
        }.get()) ?? []
        await withTaskGroup(of: Void.self) { tasks in
            var inFlight = 0
            for hangUp in hangUps {
                if inFlight >= 8 {
                    await tasks.next()
                    inFlight -= 1
                }
                tasks.addTask { await hangUp() }
                inFlight += 1
            }
        }
    }

    func progress(_ text: String) {
        guard configuration.progress else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K\(text)".utf8))
    }
}
