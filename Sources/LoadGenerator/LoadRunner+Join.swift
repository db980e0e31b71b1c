import ChorusCore
import DTLS
import Foundation
import NIOCore
import NIOPosix

/// Hands each datagram of one participant's socket to it, on the event loop. Its one property
/// is a (Sendable) participant, so it is `Sendable` for the channel initializer.
final class LoadDatagramHandler: ChannelInboundHandler, Sendable {
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
                 camera: LoadCamera?) async throws {
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
                    isProbe: configuration.isProbe(room: room, position: position),
                    dtlsContext: context, video: camera, slots: configuration.slots)
                participant.dtxMode = configuration.dtx
                if !participant.statistics.isProbe { participant.connection.authenticateOneIn = configuration.srtpSample }
                participant.offersTransportCC = configuration.transportCC
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
        try await awaitHandshakes()
    }

    /// Gives the last handshakes (of every connection) up to 5 s before going on.
    func awaitHandshakes() async throws {
        for _ in 0..<50 {
            if try await onEveryShard(\.pendingHandshakes).reduce(0, +) == 0 { break }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
    }

    /// Opens the participant's socket, joins with an offer (through the target's signalling),
    /// and starts ICE towards the answer's candidate.
    func join(_ participant: LoadParticipant) async {
        do {
            try await connect(participant) { offer in
                try await self.signaling.join(room: participant.room, userId: participant.userId, offer: offer)
            }
        } catch {
            await noteFailure("\(participant.userId): \(error)")
        }
    }

    func noteFailure(_ text: String) async {
        try? await loop.submit { self.joinFailures.append(text) }.get()
    }

    /// Binds a socket for `participant` (on the group's next loop, so connections spread
    /// round-robin over the shards), lets `negotiate` turn its offer into an answer, and
    /// starts ICE (we offered, so we control).
    func connect(_ participant: LoadParticipant, negotiate: (String) async throws -> LoadJoin) async throws {
        if configuration.tcp {
            try await connectTCP(participant, negotiate: negotiate)
            return
        }
        if configuration.sharedSockets {
            try await connectShared(participant, negotiate: negotiate)
            return
        }
        let channel = try await bind(participant)
        let started = MediaTime.now()
        do {
            guard let port = channel.localAddress?.port else { throw LoadHTTP.Failure(description: "no local port") }
            let joined = try await negotiate(participant.offer(host: localHost, port: port))
            try await begin(participant, on: channel, answer: LoadSDP.parseAnswer(joined.answer), started: started,
                            controlling: true, hangUp: joined.hangUp)
        } catch {
            try? await channel.close()
            throw error
        }
    }

    func bind(_ participant: LoadParticipant) async throws -> any Channel {
        let handler = LoadDatagramHandler(participant: participant)
        // One datagram per readiness event: a listener's socket holds one packet at a time, and
        // NIO's default of 4 reads per event makes every event a second, empty `recvmsg`
        // (EAGAIN). epoll is level-triggered in NIO, so a second queued packet is reported again.
        return try await DatagramBootstrap(group: group)
            .channelOption(.maxMessagesPerRead, value: 1)
            .channelInitializer { $0.pipeline.addHandler(handler) }
            .bind(host: localHost, port: 0).get()
    }

    /// Opens the shared sockets (`--sockets shared`), one per `participantsPerSocket`
    /// participants of the run, dealt over the shards; each channel is closed with its shard's.
    func openSharedSockets() async throws {
        guard localHost.hasPrefix("127.") else {
            throw LoadHTTP.Failure(description: "--sockets shared needs a server on loopback, not \(localHost)")
        }
        let total = configuration.rooms * configuration.participants
        let count = (total + LoadSharedSocket.participantsPerSocket - 1) / LoadSharedSocket.participantsPerSocket
        var sockets: [LoadSharedSocket] = []
        for index in 0..<count {
            let shard = shards[index % shards.count]
            let socket = try await LoadSharedSocket.open(for: shard)
            try await shard.loop.submit { shard.adoptShared(socket) }.get()
            sockets.append(socket)
        }
        sharedSockets.withLock { $0 = sockets }
    }

    /// Joins `participant` on a shared socket, from a loopback address of its own: the
    /// `index`th participant takes socket `index / participantsPerSocket` and that socket's
    /// shard (so consecutive joins share a socket and the sockets spread over the loops).
    func connectShared(_ participant: LoadParticipant,
                       negotiate: (String) async throws -> LoadJoin) async throws {
        let index = sharedIndex.wrappingAdd(1, ordering: .relaxed).oldValue
        let slot = index / LoadSharedSocket.participantsPerSocket
        guard let socket = sharedSockets.withLock({ $0.indices.contains(slot) ? $0[slot] : nil }) else {
            throw LoadHTTP.Failure(description: "no shared socket for participant \(index)")
        }
        let shard = socket.shard
        let address = LoadSharedSocket.Address(index: index)
        let started = MediaTime.now()
        let joined = try await negotiate(participant.offer(host: address.text, port: socket.port))
        let answer = try LoadSDP.parseAnswer(joined.answer)
        let server = try SocketAddress(ipAddress: answer.host, port: answer.port)
        try await shard.loop.submit {
            participant.confine(to: shard.loop)
            participant.connection.joinStartedAt = started
            participant.connection.send = { bytes in socket.send(bytes, from: address, to: server) }
            shard.adopt(participant, channel: nil, hangUp: joined.hangUp)
            shard.route(address, to: participant)
            participant.start(answer, now: .now(), controlling: true)
        }.get()
    }

    /// Wires the participant's sends to the server's candidate and starts ICE, on the loop.
    /// With `framed`, the channel is an ICE-TCP connection to the server: each datagram goes
    /// down it with its RFC 4571 length prefix.
    func begin(_ participant: LoadParticipant, on channel: any Channel, answer: LoadSDP.Answer, started: MediaTime,
               controlling: Bool, framed: Bool = false, hangUp: @escaping @Sendable () async -> Void) async throws {
        let server = try SocketAddress(ipAddress: answer.host, port: answer.port)
        let shard = shard(of: channel)
        try await shard.loop.submit {
            participant.confine(to: shard.loop)
            participant.connection.joinStartedAt = started
            participant.connection.send = framed ? { bytes in
                guard bytes.count <= Int(UInt16.max) else { return }
                var buffer = channel.allocator.buffer(capacity: bytes.count + 2)
                buffer.writeInteger(UInt16(bytes.count))
                buffer.writeBytes(bytes)
                channel.writeAndFlush(buffer, promise: nil)
            } : { bytes in
                var buffer = channel.allocator.buffer(capacity: bytes.count)
                buffer.writeBytes(bytes)
                channel.writeAndFlush(AddressedEnvelope(remoteAddress: server, data: buffer), promise: nil)
            }
            shard.adopt(participant, channel: channel, hangUp: hangUp)
            participant.start(answer, now: .now(), controlling: controlling)
        }.get()
    }

    /// Every participant hangs up, a few at a time.
    func leaveAll() async {
        let hangUps: [[@Sendable () async -> Void]] = (try? await onEveryShard { shard in
            for participant in shard.participants + shard.auxiliaries { participant.connection.leaving = true }
            return shard.hangUps
        }) ?? []
        _ = await forEach(hangUps.flatMap { $0 }) { hangUp in await hangUp() }
    }

    /// Runs `body` for every element, 8 at a time (the joins' pace), and returns the results.
    func forEach<Element: Sendable, Result: Sendable>(
        _ elements: [Element], _ body: @escaping @Sendable (Element) async -> Result
    ) async -> [Result] {
        await withTaskGroup(of: Result.self) { tasks in
            var results: [Result] = []
            var inFlight = 0
            for element in elements {
                if inFlight >= 8, let result = await tasks.next() {
                    results.append(result)
                    inFlight -= 1
                }
                tasks.addTask { await body(element) }
                inFlight += 1
            }
            for await result in tasks { results.append(result) }
            return results
        }
    }

    func progress(_ text: String) {
        guard configuration.progress else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K\(text)".utf8))
    }
}
