import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A loopback TCP server for the poster's tests: each connection gets `response` once its
/// request has arrived (nothing, for a receiver that never answers), and stays open afterwards
/// unless `closes`. It keeps what each connection sent, to look at the request.
final class CannedHTTPServer: Sendable {
    let channel: any Channel
    private let received = NIOLockedValueBox<[String]>([])

    var port: Int { channel.localAddress?.port ?? 0 }
    /// Each connection's bytes, as text.
    var requests: [String] { received.withLockedValue { $0 } }

    init(host: String = "127.0.0.1", response: [UInt8]?, closes: Bool = false) async throws {
        let received = self.received
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(
                        Responder(response: response, closes: closes, received: received))
                }
            }
            .bind(host: host, port: 0).get()
    }

    func close() async {
        try? await channel.close()
    }

    /// Answers one request: once the header block's end has arrived, writes the response.
    /// `@unchecked Sendable`: a channel handler, used on its channel's event loop only.
    private final class Responder: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let response: [UInt8]?
        let closes: Bool
        let received: NIOLockedValueBox<[String]>
        var text = ""
        var answered = false
        var index: Int?

        init(response: [UInt8]?, closes: Bool, received: NIOLockedValueBox<[String]>) {
            self.response = response
            self.closes = closes
            self.received = received
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            text += String(decoding: unwrapInboundIn(data).readableBytesView, as: UTF8.self)
            let slot = index ?? received.withLockedValue { list in
                list.append("")
                return list.count - 1
            }
            index = slot
            let seen = text
            received.withLockedValue { $0[slot] = seen }
            guard !answered, text.contains("\r\n\r\n"), let response else { return }
            answered = true
            let write = context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: response)))
            if closes { write.whenComplete { [channel = context.channel] _ in channel.close(promise: nil) } }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
