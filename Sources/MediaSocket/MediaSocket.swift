import CUDP
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
/// With a TCP port (`tcpPort`), it also accepts ICE-TCP connections (`MediaTCPListener`), whose
/// frames are routed like datagrams and whose peers' addresses carry transport `.tcp`; sends to
/// such an address go down its connection.
///
/// Run as a Service: binds in `run()`, closes on graceful shutdown. `Sendable` without
/// `@unchecked`: immutable, apart from the bound channels and writer behind a lock.
public final class MediaSocket: DatagramSink, Service {
    public let host: String
    public let port: Int
    /// Where ICE-TCP listens, if anywhere.
    public enum TCPPort: Sendable, Equatable {
        case off
        /// The UDP port's number (an ephemeral port if that is taken over TCP).
        case sameAsUDP
        case port(Int)
    }

    public let tcpPort: TCPPort
    let router: DatagramRouter
    let logger: Logger
    private let group: any EventLoopGroup
    private let bound: NIOLockedValueBoxChannel
    let tcp: MediaTCPListener?

    public init(host: String, port: Int, tcpPort: TCPPort = .off, router: DatagramRouter, logger: Logger,
                group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.host = host
        self.port = port
        self.tcpPort = tcpPort
        self.router = router
        self.logger = logger
        self.group = group
        self.bound = NIOLockedValueBoxChannel()
        self.tcp = tcpPort == .off ? nil : MediaTCPListener(
            router: router, limits: .fitting(descriptorLimit: DescriptorLimit.current), logger: logger)
    }

    /// The port ICE-TCP listens on once bound; nil without ICE-TCP.
    public var boundTCPPort: Int? { bound.tcpChannel()?.localAddress?.port }

    /// Binds the ICE-TCP listener after the UDP socket bound `udpPort`.
    private func bindTCP(udpPort: Int) async throws {
        guard let tcp else { return }
        // A loop of its own where the group has several, so that a flood of connections does
        // not delay the UDP reads.
        let udpLoop = bound.get()?.eventLoop
        let loop = group.makeIterator().first { $0 !== udpLoop } ?? group.next()
        let channel: any Channel
        switch tcpPort {
        case .off: return
        case .sameAsUDP:
            do {
                channel = try await tcp.bind(host: host, port: udpPort, loop: loop)
            } catch {
                logger.warning("TCP port \(udpPort) is taken; ICE-TCP listens on another", metadata: ["error": "\(error)"])
                channel = try await tcp.bind(host: host, port: 0, loop: loop)
            }
        case .port(let port):
            channel = try await tcp.bind(host: host, port: port, loop: loop)
        }
        bound.setTCP(channel)
        logger.info("media TCP listener bound", metadata: [
            "tcp": "\(host):\(channel.localAddress?.port ?? 0)", "maxConnections": "\(tcp.limits.totalLimit)",
        ])
    }

    /// Binds the socket; returns the bound port (useful with port 0 in tests). The socket is
    /// made here and handed to NIO for reading; a duplicate of it is kept for writing from the
    /// rooms' threads (`DirectDatagramWriter`).
    @discardableResult
    public func bind() async throws -> Int {
        let address = try SocketAddress.makeAddressResolvingHost(host, port: port)
        let socket = try Self.boundSocket(address)
        // Bound to a wildcard, the socket learns each datagram's local address (IP_PKTINFO /
        // IPV6_PKTINFO) so that replies leave from it (see `TransportAddress.base`).
        let locals = Self.isWildcard(address) ? LocalAddressTable() : nil
        let writer: DirectDatagramWriter
        do {
            writer = try DirectDatagramWriter(duplicating: socket, isIPv6: address.protocol == .inet6, locals: locals)
        } catch {
            close(socket)
            throw error
        }
        let channel = try await DatagramBootstrap(group: group)
            // With vector reads the allocator MUST hold 64 datagrams, or each is silently truncated.
            .channelOption(.datagramVectorReadMessageCount, value: 64)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 64 * 2048))
            .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
            .channelOption(.socketOption(.so_sndbuf), value: 4 << 20)
            .channelOption(.receivePacketInfo, value: locals != nil)
            .channelInitializer { [router] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(InboundHandler(router: router, locals: locals))
                }
            }
            .withBoundSocket(socket)
            .get()
        bound.set(channel, writer: writer)
        let actual = channel.localAddress?.port ?? port
        logger.info("media socket bound", metadata: ["udp": "\(host):\(actual)"])
        try await bindTCP(udpPort: actual)
        return actual
    }

    /// Whether `address` is 0.0.0.0 or ::, where the kernel picks each reply's source address.
    static func isWildcard(_ address: SocketAddress) -> Bool {
        switch address {
        case .v4(let v4): return v4.address.sin_addr.s_addr == 0
        case .v6(let v6):
            var storage = v6.address.sin6_addr
            return withUnsafeBytes(of: &storage) { $0.allSatisfy { $0 == 0 } }
        default: return false
        }
    }

    /// A non-blocking UDP socket bound to `address` (`chorus_udp_bound_socket`).
    private static func boundSocket(_ address: SocketAddress) throws -> Int32 {
        let socket = address.withSockAddr { chorus_udp_bound_socket($0, UInt32($1)) }
        guard socket >= 0 else { throw MediaSocketError.socket("UDP socket on \(address)", -socket) }
        return socket
    }

    public func run() async throws {
        if bound.get() == nil { try await bind() }
        try? await gracefulShutdown()
        await closeAll()
    }

    /// Stops listening and closes every ICE-TCP connection and the UDP socket.
    func closeAll() async {
        try? await bound.tcpChannel()?.close()
        tcp?.closeAll()
        try? await bound.get()?.close()
    }

    public func send(_ datagram: [UInt8], to destination: TransportAddress) {
        send(batch: [(datagram, destination)])
    }

    /// Sends the batch from the calling thread, one sendmmsg per 64 datagrams (see
    /// `DirectDatagramWriter`); what the kernel refuses is counted as dropped.
    public func send(batch: [Transmit]) {
        // One scan: ICE-TCP peers are the exception, and a batch without them goes out as is.
        if let tcp, batch.contains(where: { $0.destination.transport == .tcp }) {
            sendSplit(batch, tcp: tcp)
            return
        }
        sendUDP(batch)
    }

    private func sendSplit(_ batch: [Transmit], tcp: MediaTCPListener) {
        var udp: [Transmit] = []
        var byConnection: [TransportAddress: [[UInt8]]] = [:]
        for item in batch {
            if item.destination.transport == .tcp {
                byConnection[item.destination, default: []].append(item.datagram)
            } else {
                udp.append(item)
            }
        }
        if !udp.isEmpty { sendUDP(udp) }
        for (destination, datagrams) in byConnection {
            let queued = tcp.send(datagrams, to: destination)
            if queued < datagrams.count { MediaMetrics.droppedTCP.increment(by: datagrams.count - queued) }
            MediaMetrics.datagramsOut.increment(by: queued)
        }
    }

    private func sendUDP(_ batch: [Transmit]) {
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

    /// A read of at most this many datagrams leaves the reader light: it may run them itself
    /// (`DatagramReceiver.receive`). Past it, traffic is dense enough that the rooms' worker
    /// threads are awake anyway, and the reader, which serves every room, only hands over.
    static let lightRead = 4

    /// Reads on the event loop: convert and route each datagram of a read, then hand the read's
    /// datagrams over at its end, each room's in one call, saying whether the read was light.
    /// Created on the channel's event loop and used only there.
    final class InboundHandler: ChannelInboundHandler {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        let router: DatagramRouter
        let locals: LocalAddressTable?
        /// The current read's routed datagrams, and `handOver`'s scratch (storage kept from read
        /// to read).
        private var pending: [ReceivedDatagram] = []
        private var group: [ReceivedDatagram] = []
        private var handlers: [ObjectIdentifier?] = []

        init(router: DatagramRouter, locals: LocalAddressTable?) {
            self.router = router
            self.locals = locals
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let envelope = unwrapInboundIn(data)
            MediaMetrics.datagramsIn.increment()
            MediaMetrics.bytesIn.increment(by: envelope.data.readableBytes)
            let base = locals?.base(for: envelope.metadata?.packetInfo) ?? 0
            guard let source = TransportAddress(envelope.remoteAddress, base: base) else {
                MediaMetrics.drop("bad_source")
                return
            }
            let bytes = Array(envelope.data.readableBytesView)
            guard let receiver = router.route(bytes, from: source) else {
                MediaMetrics.drop("unroutable")
                return
            }
            pending.append(ReceivedDatagram(receiver: receiver, datagram: bytes, source: source, time: .now()))
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            ReceivedDatagram.handOver(&pending, readerIsLight: pending.count <= MediaSocket.lightRead, group: &group,
                                      handlers: &handlers)
            context.fireChannelReadComplete()
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
    private let tcp = NIOLockedValueBox<(any Channel)?>(nil)

    func set(_ channel: any Channel, writer: DirectDatagramWriter) {
        bound.withLockedValue { $0 = (channel, writer) }
    }
    func setTCP(_ channel: any Channel) { tcp.withLockedValue { $0 = channel } }
    func tcpChannel() -> (any Channel)? { tcp.withLockedValue { $0 } }
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
    /// Sends to an ICE-TCP peer whose connection is gone or which is not reading fast enough.
    static let droppedTCP = Counter(label: "chorus_media_dropped_total", dimensions: [("reason", "tcp_unwritable")])

    static let tcpAccepted = Counter(label: "chorus_media_tcp_connections_total", dimensions: [("result", "accepted")])
    static let tcpRefused = Counter(label: "chorus_media_tcp_connections_total", dimensions: [("result", "over_limit")])

    /// Counts a dropped inbound datagram by reason (bounded set of reason strings).
    public static func drop(_ reason: String, count: Int = 1) {
        Counter(label: "chorus_media_dropped_total", dimensions: [("reason", reason)]).increment(by: count)
    }

    /// Counts an ICE-TCP connection the server closed, by reason (bounded set).
    static func tcpClosed(_ reason: String) {
        Counter(label: "chorus_media_tcp_closed_total", dimensions: [("reason", reason)]).increment()
    }
}

import NIOConcurrencyHelpers

extension TransportAddress {
    init?(_ address: SocketAddress, transport: Transport = .udp, base: UInt8 = 0) {
        switch address {
        case .v4(let v4):
            let raw = UInt32(bigEndian: v4.address.sin_addr.s_addr)
            let bytes = [UInt8(raw >> 24), UInt8(truncatingIfNeeded: raw >> 16), UInt8(truncatingIfNeeded: raw >> 8),
                         UInt8(truncatingIfNeeded: raw)]
            self.init(bytes: bytes, port: UInt16(bigEndian: v4.address.sin_port), transport: transport, base: base)
        case .v6(let v6):
            var storage = v6.address.sin6_addr
            let bytes = withUnsafeBytes(of: &storage) { Array($0) }
            // An IPv4 peer of a dual-stack socket shows as ::ffff:a.b.c.d (RFC 4291 §2.5.5.2):
            // it is an IPv4 peer, and STUN must tell it its IPv4 address.
            let mapped = bytes.prefix(10).allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
            self.init(bytes: mapped ? Array(bytes[12...]) : bytes, port: UInt16(bigEndian: v6.address.sin6_port),
                      transport: transport, base: base)
        default:
            return nil
        }
    }
}
