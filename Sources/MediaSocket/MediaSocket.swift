import CUDP
import ChorusCore
import Glibc
import Logging
import Metrics
import NIOCore
import NIOPosix
import ServiceLifecycle

/// The one UDP port every participant of every room uses. Its reader thread (`MediaReader`)
/// reads with recvmmsg, 64 datagrams per call; each datagram is routed by `DatagramRouter` to
/// its participant, which hops to its room's queue. Sending is `DatagramSink.send`, callable
/// from any thread: it writes on the calling thread (`DirectDatagramWriter`).
///
/// With a TCP port (`tcpPort`), it also accepts ICE-TCP connections (`MediaTCPListener`), whose
/// frames are routed like datagrams and whose peers' addresses carry transport `.tcp`; sends to
/// such an address go down its connection.
///
/// Run as a Service: binds in `run()`, closes on graceful shutdown. `Sendable` without
/// `@unchecked`: immutable, apart from the bound reader, writer and TCP channel behind locks.
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
    private let bound: BoundMediaSocket
    let tcp: MediaTCPListener?
    /// The rooms whose 20 ms ticks the reader fires, after its read before each tick (rooms
    /// added before `bind` start ticking once the reader runs).
    public let ticks = TickList()

    public convenience init(host: String, port: Int, tcpPort: TCPPort = .off, router: DatagramRouter,
                            logger: Logger, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.init(host: host, port: port, tcpPort: tcpPort, router: router, logger: logger, group: group,
                  tcpLimits: .fitting(descriptorLimit: DescriptorLimit.current))
    }

    /// With ICE-TCP limits of the caller's choosing (tests that must outlive a timeout).
    init(host: String, port: Int, tcpPort: TCPPort, router: DatagramRouter, logger: Logger,
         group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, tcpLimits: MediaTCPListener.Limits) {
        self.host = host
        self.port = port
        self.tcpPort = tcpPort
        self.router = router
        self.logger = logger
        self.group = group
        self.bound = BoundMediaSocket()
        self.tcp = tcpPort == .off ? nil : MediaTCPListener(router: router, limits: tcpLimits, logger: logger)
    }

    /// The port ICE-TCP listens on once bound; nil without ICE-TCP.
    public var boundTCPPort: Int? { bound.tcpChannel()?.localAddress?.port }

    /// Binds the ICE-TCP listener after the UDP socket bound `udpPort`.
    private func bindTCP(udpPort: Int) async throws {
        guard let tcp else { return }
        let loop = group.next()
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

    /// Binds the socket and starts its reader; returns the bound port (useful with port 0 in
    /// tests). The reader owns the socket; a duplicate of it is kept for writing from the rooms'
    /// threads (`DirectDatagramWriter`).
    @discardableResult
    public func bind() async throws -> Int {
        let address = try SocketAddress.makeAddressResolvingHost(host, port: port)
        let socket = try Self.boundSocket(address)
        // Bound to a wildcard, the socket learns each datagram's local address (IP_PKTINFO /
        // IPV6_PKTINFO) so that replies leave from it (see `TransportAddress.base`).
        let locals = Self.isWildcard(address) ? LocalAddressTable() : nil
        let isIPv6 = address.protocol == .inet6
        let reader: MediaReader
        let writer: DirectDatagramWriter
        do {
            writer = try DirectDatagramWriter(duplicating: socket, isIPv6: isIPv6, locals: locals)
            reader = try MediaReader(socket: socket, isIPv6: isIPv6, router: router, locals: locals, ticks: ticks)
        } catch {
            close(socket)
            throw error
        }
        do {
            try reader.start()
        } catch {
            reader.stop()  // closes the socket; the writer's duplicate closes with the writer
            throw error
        }
        bound.set(reader, writer: writer)
        let actual = Self.localPort(of: socket) ?? port
        logger.info("media socket bound", metadata: ["udp": "\(host):\(actual)"])
        try await bindTCP(udpPort: actual)
        return actual
    }

    /// The port `socket` is bound to (getsockname), nil if the call fails.
    private static func localPort(of socket: Int32) -> Int? {
        var storage = sockaddr_in6()
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        // sin_port and sin6_port sit at the same offset.
        return result == 0 ? Int(UInt16(bigEndian: storage.sin6_port)) : nil
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

    /// A non-blocking UDP socket bound to `address` (`chorus_udp_bound_socket`), with 4 MiB
    /// buffers each way: a tick's burst to thousands of listeners, or a read that waits behind
    /// a busy core, must not overflow them.
    private static func boundSocket(_ address: SocketAddress) throws -> Int32 {
        let socket = address.withSockAddr { chorus_udp_bound_socket($0, UInt32($1)) }
        guard socket >= 0 else { throw MediaSocketError.socket("UDP socket on \(address)", -socket) }
        var size: Int32 = 4 << 20
        for option in [SO_RCVBUF, SO_SNDBUF] {
            _ = setsockopt(socket, SOL_SOCKET, option, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        return socket
    }

    public func run() async throws {
        if bound.reader() == nil { try await bind() }
        try? await gracefulShutdown()
        await closeAll()
    }

    /// Stops listening and closes every ICE-TCP connection and the UDP socket.
    func closeAll() async {
        try? await bound.tcpChannel()?.close()
        tcp?.closeAll()
        bound.reader()?.stop()
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
        if sent.datagrams < batch.count { MediaMetrics.droppedOut.increment(by: batch.count - sent.datagrams) }
        guard sent.datagrams > 0 else { return }
        var bytes = 0
        for item in batch { bytes += item.datagram.count }
        MediaMetrics.datagramsOut.increment(by: sent.datagrams)
        MediaMetrics.bytesOut.increment(by: bytes)
        if sent.coalesced > 0 { MediaMetrics.coalescedOut.increment(by: sent.coalesced) }
    }

    /// A read of at most this many datagrams leaves the reader light: it may run them itself
    /// (`DatagramReceiver.receive`). Past it, traffic is dense enough that the rooms' worker
    /// threads are awake anyway, and the reader, which serves every room, only hands over.
    static let lightRead = 4
    /// The same for a read once per tick (`ReadSchedule`): the reader has nothing else to do
    /// until the next tick, and a small room's tick's worth is a few datagrams per participant
    /// who talks.
    static let tickAlignedLightRead = 32
}

/// The bound socket's reader and writer and the ICE-TCP channel, set once from `bind` and read
/// from any thread, under a lock.
final class BoundMediaSocket: Sendable {
    private let bound = NIOLockedValueBox<(reader: MediaReader?, writer: DirectDatagramWriter?)>((nil, nil))
    private let tcp = NIOLockedValueBox<(any Channel)?>(nil)

    func set(_ reader: MediaReader, writer: DirectDatagramWriter) {
        bound.withLockedValue { $0 = (reader, writer) }
    }
    func setTCP(_ channel: any Channel) { tcp.withLockedValue { $0 = channel } }
    func tcpChannel() -> (any Channel)? { tcp.withLockedValue { $0 } }
    func reader() -> MediaReader? { bound.withLockedValue { $0.reader } }
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
    /// Reads of the socket, by schedule: once per room tick, or on arrival (`ReadSchedule`).
    static let tickAlignedReads = Counter(label: "chorus_media_reads_total", dimensions: [("schedule", "tick")])
    static let promptReads = Counter(label: "chorus_media_reads_total", dimensions: [("schedule", "prompt")])
    /// Datagrams sent as segments of one coalesced message (UDP GSO), of `datagramsOut`.
    static let coalescedOut = Counter(label: "chorus_media_coalesced_datagrams_total")
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
            self.init(ipv4: UInt32(bigEndian: v4.address.sin_addr.s_addr), port: UInt16(bigEndian: v4.address.sin_port),
                      transport: transport, base: base)
        case .v6(let v6):
            var storage = v6.address.sin6_addr
            let bytes = withUnsafeBytes(of: &storage) { Array($0) }
            self.init(socketIPv6High: bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) },
                      low: bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) },
                      port: UInt16(bigEndian: v6.address.sin6_port), transport: transport, base: base)
        default:
            return nil
        }
    }
}
