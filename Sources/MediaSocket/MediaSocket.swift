import ChorusCore
import Logging
import Metrics
import NIOCore
import NIOPosix
import ServiceLifecycle

/// The one UDP port every participant of every room uses. A SwiftNIO datagram channel with
/// vector reads (recvmmsg, 64 per call); each datagram is routed by `DatagramRouter` to its
/// participant, which hops to its room's queue. Sending is `DatagramSink.send`, callable from
/// any thread (NIO hops to the channel's event loop).
///
/// Run as a Service: binds in `run()`, closes on graceful shutdown.
public final class MediaSocket: DatagramSink, Service, @unchecked Sendable {
    public let host: String
    public let port: Int
    let router: DatagramRouter
    let logger: Logger
    private let group: any EventLoopGroup
    private let bound: NIOLockedValueBoxChannel

    public init(host: String, port: Int, router: DatagramRouter, logger: Logger,
                group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.host = host
        self.port = port
        self.router = router
        self.logger = logger
        self.group = group
        self.bound = NIOLockedValueBoxChannel()
    }

    /// Binds the socket; returns the bound port (useful with port 0 in tests).
    @discardableResult
    public func bind() async throws -> Int {
        let handler = InboundHandler(router: router)
        let channel = try await DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            // With vector reads the allocator MUST hold 64 datagrams, or each is silently truncated.
            .channelOption(.datagramVectorReadMessageCount, value: 64)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 64 * 2048))
            .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
            .channelOption(.socketOption(.so_sndbuf), value: 4 << 20)
            .channelInitializer { channel in channel.pipeline.addHandler(handler) }
            .bind(host: host, port: port)
            .get()
        bound.set(channel)
        let actual = channel.localAddress?.port ?? port
        logger.info("media socket bound", metadata: ["udp": "\(host):\(actual)"])
        return actual
    }

    public func run() async throws {
        if bound.get() == nil { try await bind() }
        try? await gracefulShutdown()
        try? await bound.get()?.close()
    }

    public func send(_ datagram: [UInt8], to destination: TransportAddress) {
        guard let channel = bound.get(), let address = destination.socketAddress else {
            MediaMetrics.droppedOut.increment()
            return
        }
        let buffer = channel.allocator.buffer(bytes: datagram)
        MediaMetrics.datagramsOut.increment()
        MediaMetrics.bytesOut.increment(by: datagram.count)
        channel.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: buffer), promise: nil)
    }

    /// One hop onto the event loop for the whole batch, written and flushed together, so NIO
    /// can use one vectored write (sendmmsg) instead of a task and a syscall per datagram.
    public func send(batch: [(datagram: [UInt8], destination: TransportAddress)]) {
        guard let channel = bound.get() else {
            MediaMetrics.droppedOut.increment(by: batch.count)
            return
        }
        var bytes = 0
        for item in batch { bytes += item.datagram.count }
        MediaMetrics.datagramsOut.increment(by: batch.count)
        MediaMetrics.bytesOut.increment(by: bytes)
        channel.eventLoop.execute {
            for item in batch {
                guard let address = item.destination.socketAddress else {
                    MediaMetrics.droppedOut.increment()
                    continue
                }
                let buffer = channel.allocator.buffer(bytes: item.datagram)
                channel.write(AddressedEnvelope(remoteAddress: address, data: buffer), promise: nil)
            }
            channel.flush()
        }
    }

    /// Reads on the event loop: convert, route, hand over. Nothing else happens here.
    final class InboundHandler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        let router: DatagramRouter

        init(router: DatagramRouter) {
            self.router = router
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let envelope = unwrapInboundIn(data)
            MediaMetrics.datagramsIn.increment()
            MediaMetrics.bytesIn.increment(by: envelope.data.readableBytes)
            guard let source = TransportAddress(envelope.remoteAddress) else {
                MediaMetrics.drop("bad_source")
                return
            }
            let bytes = Array(envelope.data.readableBytesView)
            guard let receiver = router.route(bytes, from: source) else {
                MediaMetrics.drop("unroutable")
                return
            }
            receiver.receive(bytes, from: source, at: .now())
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // ICMP port unreachable and the like surface here; a UDP server keeps going.
            MediaMetrics.drop("socket_error")
        }
    }
}

/// The bound channel, set once from `bind` and read from any thread.
final class NIOLockedValueBoxChannel: @unchecked Sendable {
    private let lock = NIOLock()
    private var channel: (any Channel)?

    func set(_ channel: any Channel) { lock.withLock { self.channel = channel } }
    func get() -> (any Channel)? { lock.withLock { channel } }
}

/// Counters of the media port, exported on /metrics.
public enum MediaMetrics {
    static let datagramsIn = Counter(label: "chorus_media_datagrams_total", dimensions: [("direction", "in")])
    static let datagramsOut = Counter(label: "chorus_media_datagrams_total", dimensions: [("direction", "out")])
    static let bytesIn = Counter(label: "chorus_media_bytes_total", dimensions: [("direction", "in")])
    static let bytesOut = Counter(label: "chorus_media_bytes_total", dimensions: [("direction", "out")])
    static let droppedOut = Counter(label: "chorus_media_dropped_total", dimensions: [("reason", "unsendable")])

    /// Counts a dropped inbound datagram by reason (bounded set of reason strings).
    public static func drop(_ reason: String) {
        Counter(label: "chorus_media_dropped_total", dimensions: [("reason", reason)]).increment()
    }
}

import NIOConcurrencyHelpers

extension TransportAddress {
    init?(_ address: SocketAddress) {
        switch address {
        case .v4(let v4):
            let raw = UInt32(bigEndian: v4.address.sin_addr.s_addr)
            let bytes = [UInt8(raw >> 24), UInt8(truncatingIfNeeded: raw >> 16), UInt8(truncatingIfNeeded: raw >> 8),
                         UInt8(truncatingIfNeeded: raw)]
            self.init(bytes: bytes, port: UInt16(bigEndian: v4.address.sin_port))
        case .v6(let v6):
            var storage = v6.address.sin6_addr
            let bytes = withUnsafeBytes(of: &storage) { Array($0) }
            self.init(bytes: bytes, port: UInt16(bigEndian: v6.address.sin6_port))
        default:
            return nil
        }
    }

    var socketAddress: SocketAddress? {
        switch family {
        case .ipv4:
            var raw = sockaddr_in()
            raw.sin_family = sa_family_t(AF_INET)
            raw.sin_port = port.bigEndian
            raw.sin_addr.s_addr = UInt32(truncatingIfNeeded: low).bigEndian
            return SocketAddress(raw, host: "")
        case .ipv6:
            var raw = sockaddr_in6()
            raw.sin6_family = sa_family_t(AF_INET6)
            raw.sin6_port = port.bigEndian
            let bytes = self.bytes
            withUnsafeMutableBytes(of: &raw.sin6_addr) { $0.copyBytes(from: bytes) }
            return SocketAddress(raw, host: "")
        }
    }
}
