import ChorusCore
import ICETCP
import NIOCore
import NIOPosix

/// Reads one participant's ICE-TCP connection: the byte stream is cut into datagrams by an RFC
/// 4571 deframer (`ICETCP`, the server's own), and each goes to the participant on the event
/// loop. A framing error (a frame over 4 KiB) closes the connection. Created on the loop by the
/// channel initializer and used only there.
final class LoadTCPFrameHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let participant: LoadParticipant
    private var deframer = RFC4571Deframer()
    private var frames: [[UInt8]] = []

    init(participant: LoadParticipant) {
        self.participant = participant
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        do {
            try buffer.withUnsafeReadableBytes { bytes throws(RFC4571FramingError) in
                try deframer.feed(bytes, into: &frames)
            }
        } catch {
            participant.fail("ICE-TCP framing: \(error)")
            context.close(promise: nil)
        }
        let now = MediaTime.now()
        for frame in frames { participant.receive(frame, now: now) }
        frames.removeAll(keepingCapacity: true)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !participant.connection.leaving, participant.connection.phase != .joining { participant.fail("ICE-TCP connection closed") }
        context.fireChannelInactive()
    }
}

extension LoadRunner {
    /// `connect` over ICE-TCP (RFC 6544): the offer carries an active TCP candidate (port 9,
    /// as browsers write it), the connection goes to the answer's passive TCP candidate, and
    /// ICE, DTLS and SRTP run over it with RFC 4571 framing. TCP_NODELAY, as browsers set it.
    func connectTCP(_ participant: LoadParticipant, negotiate: (String) async throws -> LoadJoin) async throws {
        let started = MediaTime.now()
        let joined = try await negotiate(participant.offer(host: localHost, port: 9, tcp: true))
        let answer = try LoadSDP.parseAnswer(joined.answer)
        guard let port = answer.tcpPort else {
            await joined.hangUp()
            throw LoadHTTP.Failure(description: "the answer has no passive TCP candidate")
        }
        let channel: any Channel
        do {
            var bootstrap = ClientBootstrap(group: group).channelOption(.socketOption(.tcp_nodelay), value: 1)
            // The server takes at most 16 ICE-TCP connections per client address: on loopback,
            // where every simulated participant would share 127.0.0.1, each gets its own
            // 127.0.0.x (x = 2…254), as if it were on a host of its own.
            if answer.host.hasPrefix("127."), let source = try? SocketAddress(
                ipAddress: "127.0.0.\(2 + UInt32(truncatingIfNeeded: participant.audioSSRC) % 253)", port: 0) {
                bootstrap = bootstrap.bind(to: source)
            }
            channel = try await bootstrap
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(LoadTCPFrameHandler(participant: participant))
                    }
                }
                .connect(host: answer.host, port: port).get()
        } catch {
            await joined.hangUp()
            throw error
        }
        do {
            try await begin(participant, on: channel, answer: answer, started: started, controlling: true, framed: true,
                            hangUp: joined.hangUp)
        } catch {
            try? await channel.close()
            throw error
        }
    }
}
