import ChorusCore
import Glibc
import Logging
import Metrics
import NIOCore
import NIOPosix
import ServiceLifecycle

/// The one UDP port every participant of every room uses. A SwiftNIO datagram channel with
/// vector reads (recvmmsg, 64 per call); each datagram is routed by `DatagramRouter` to its
/// participant, which hops to its room's queue. Sending is `DatagramSink.send`, callable from
/// any thread: it writes on the calling thread (`DirectDatagramWriter`), not through NIO.
///
/// Run as a Service: binds in `run()`, closes on graceful shutdown. `Sendable` without
/// `@unchecked`: immutable, apart from the bound channel and writer behind a lock.
public final class MediaSocket: DatagramSink, Service {
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

    /// Binds the socket; returns the bound port (useful with port 0 in tests). The socket is
    /// made here and handed to NIO for reading; a duplicate of it is kept for writing from the
    /// rooms' threads (`DirectDatagramWriter`).
    @discardableResult
    public func bind() async throws -> Int {
        let address = try SocketAddress.makeAddressResolvingHost(host, port: port)
        let socket = try Self.boundSocket(address)
        let writer: DirectDatagramWriter
        do {
            writer = try DirectDatagramWriter(duplicating: socket, isIPv6: address.protocol == .inet6)
        } catch {
            close(socket)
            throw error
        }
        let handler = InboundHandler(router: router)
        let channel = try await DatagramBootstrap(group: group)
            // With vector reads the allocator MUST hold 64 datagrams, or each is silently truncated.
            .channelOption(.datagramVectorReadMessageCount, value: 64)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 64 * 2048))
            .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
            .channelOption(.socketOption(.so_sndbuf), value: 4 << 20)
            .channelInitializer { channel in channel.pipeline.addHandler(handler) }
            .withBoundSocket(socket)
            .get()
        bound.set(channel, writer: writer)
        let actual = channel.localAddress?.port ?? port
        logger.info("media socket bound", metadata: ["udp": "\(host):\(actual)"])
        return actual
    }

    /// A non-blocking UDP socket bound to `address` (SO_REUSEADDR, as NIO's bootstrap sets it).
    private static func boundSocket(_ address: SocketAddress) throws -> Int32 {
        let type = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let socket = Glibc.socket(address.protocol.rawValue, type, 0)
        guard socket >= 0 else { throw MediaSocketError.socket("socket", errno) }
        var one: Int32 = 1
        _ = setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let result = address.withSockAddr { Glibc.bind(socket, $0, socklen_t($1)) }
        guard result == 0 else {
            let error = errno
            close(socket)
            throw MediaSocketError.socket("bind \(address)", error)
        }
        return socket
    }

    public func run() async throws {
        if bound.get() == nil { try await bind() }
        try? await gracefulShutdown()
        try? await bound.get()?.close()
    }

    public func send(_ datagram: [UInt8], to destination: TransportAddress) {
        send(batch: [(datagram, destination)])
    }

    /// Sends the batch from the calling thread, one sendmmsg per 64 datagrams (see
    /// `DirectDatagramWriter`); what the kernel refuses is counted as dropped.
    public func send(batch: [Transmit]) {
        guard let writer = bound.writer() else {
            MediaMetrics.droppedOut.increment(by: batch.count)
            return
        }
        let sent = writer.send(batch: batch)
        if sent < batch.count { MediaMetrics.droppedOut.increment(by: batch.count - sent) }
        guard sent > 0 else { return }
        var bytes = 0
        for item in batch { bytes += item.datagram.count }
        MediaMetrics.datagramsOut.increment(by: sent)
        MediaMetrics.bytesOut.increment(by: bytes)
    }

    /// Reads on the event loop: convert, route, hand over. Nothing else happens here. Its one
    /// property is the (Sendable) router, so it is `Sendable` for the channel initializer.
    final class InboundHandler: ChannelInboundHandler, Sendable {
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

/// The bound channel and its writer, set once from `bind` and read from any thread, under a lock.
final class NIOLockedValueBoxChannel: Sendable {
    private let bound = NIOLockedValueBox<(channel: (any Channel)?, writer: DirectDatagramWriter?)>((nil, nil))

    func set(_ channel: any Channel, writer: DirectDatagramWriter) {
        bound.withLockedValue { $0 = (channel, writer) }
    }
    func get() -> (any Channel)? { bound.withLockedValue { $0.channel } }
    func writer() -> DirectDatagramWriter? { bound.withLockedValue { $0.writer } }
}

/// Why the media port could not be opened.
public enum MediaSocketError: Error, CustomStringConvertible {
    case socket(String, Int32)

    public var description: String {
        switch self {
        case .socket(let call, let code): return "\(call) failed: \(String(cString: strerror(code)))"
        }
    }
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
}
