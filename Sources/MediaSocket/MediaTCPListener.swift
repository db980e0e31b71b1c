import ChorusCore
import ICETCP
import Logging
import NIOCore
import NIOPosix

/// ICE-TCP, passive side (RFC 6544): a TCP listener on the media port number for clients whose
/// network drops UDP. Each accepted connection carries RFC 4571-framed STUN, DTLS and
/// SRTP/SRTCP; every frame is routed exactly like a UDP datagram (`DatagramRouter`), with the
/// connection's peer address marked `.tcp`, so rooms and transports do not care which it came
/// over. What a room sends to a `.tcp` address goes down that connection (`send(batch:)`).
///
/// Bounded against hostile clients: a frame longer than 4 KiB closes the connection; a
/// connection that carries no routable STUN within `firstCheckTimeout` is closed; one that goes
/// silent for `idleTimeout` is closed; at most `perHostLimit` connections per IP address and
/// `totalLimit` in all (no more than half the process's descriptors); and a peer that does not
/// read makes the server drop (and count) what it sends, never wait: writes are bounded by NIO's
/// write-buffer water marks.
final class MediaTCPListener: Sendable {
    struct Limits: Sendable {
        var firstCheckTimeout: TimeAmount = .seconds(10)
        var idleTimeout: TimeAmount = .seconds(60)
        var perHostLimit = 16
        var totalLimit = 4_096
        /// Bytes queued for one connection beyond which its sends are dropped.
        var writeHighWaterMark = 256 * 1024

        /// The limits for a process that may hold `descriptorLimit` descriptors: ICE-TCP takes at
        /// most half of them, so that no flood of connections can exhaust the rest (HTTP, the
        /// database, Dispatch's own reads of /proc; see `DescriptorLimit`).
        static func fitting(descriptorLimit: Int) -> Limits {
            var limits = Limits()
            limits.totalLimit = min(limits.totalLimit, max(1, descriptorLimit / 2))
            return limits
        }
    }

    let router: DatagramRouter
    let limits: Limits
    let connections: TCPConnectionTable
    private let logger: Logger

    init(router: DatagramRouter, limits: Limits = Limits(), logger: Logger) {
        self.router = router
        self.limits = limits
        self.logger = logger
        self.connections = TCPConnectionTable(perHostLimit: limits.perHostLimit, totalLimit: limits.totalLimit)
    }

    /// Binds and starts accepting; returns the server channel. The listener and every connection
    /// it accepts run on one event loop, `loop`: a connection over a limit is then closed within
    /// the accept that made it. With connections spread over a group, each refusal waited for its
    /// connection's loop, and under a flood on a loaded machine some 300 refused sockets stayed
    /// open beyond the cap at once (Tests/Interop/test_tcp_half_open.py).
    func bind(host: String, port: Int, loop: any EventLoop) async throws -> any Channel {
        let highWater = limits.writeHighWaterMark
        return try await ServerBootstrap(group: loop, childGroup: loop)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: highWater / 2, high: highWater))
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture { try self.accept(channel) }
            }
            .bind(host: host, port: port)
            .get()
    }

    /// Admits a new connection within the limits and installs its handler (on its event loop).
    private func accept(_ channel: any Channel) throws {
        guard let remote = channel.remoteAddress, let source = TransportAddress(remote, transport: .tcp) else {
            MediaMetrics.drop("tcp_bad_source")
            channel.close(promise: nil)
            return
        }
        guard connections.admit(source, channel: channel) else {
            MediaMetrics.tcpRefused.increment()
            channel.close(promise: nil)
            return
        }
        MediaMetrics.tcpAccepted.increment()
        let handler = TCPMediaHandler(source: source, listener: self)
        try channel.pipeline.syncOperations.addHandler(handler)
    }

    /// Queues `datagrams` for the connection of `destination`, framed, in one hop to its event
    /// loop. Called from a room's thread: it never blocks. Returns how many were queued; the
    /// rest are dropped because the connection is gone or its peer is not reading.
    func send(_ datagrams: [[UInt8]], to destination: TransportAddress) -> Int {
        guard let connection = connections.connection(for: destination), connection.channel.isActive,
              connection.channel.isWritable
        else { return 0 }
        // Bytes queued for the loop but not yet written count against the same bound as the
        // channel's own buffer: the room's thread may run ahead of the event loop.
        let bytes = datagrams.reduce(0) { $0 + $1.count + 2 }
        guard connection.queuedBytes.load(ordering: .relaxed) + bytes <= limits.writeHighWaterMark else { return 0 }
        connection.queuedBytes.add(bytes, ordering: .relaxed)
        let channel = connection.channel
        channel.eventLoop.execute {
            for datagram in datagrams {
                guard datagram.count <= Int(UInt16.max) else { continue }
                var buffer = channel.allocator.buffer(capacity: datagram.count + 2)
                buffer.writeInteger(UInt16(datagram.count))
                buffer.writeBytes(datagram)
                channel.write(buffer, promise: nil)
            }
            channel.flush()
            connection.queuedBytes.subtract(bytes, ordering: .relaxed)
        }
        return datagrams.count
    }

    func closeAll() {
        for channel in connections.all { channel.close(promise: nil) }
    }
}

/// One ICE-TCP connection's reader, on its event loop: deframes what arrives and routes each
/// frame as the UDP path routes a datagram. Not `Sendable`: NIO confines it to its channel's
/// event loop.
final class TCPMediaHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let source: TransportAddress
    private let listener: MediaTCPListener
    private var deframer = RFC4571Deframer()
    private var frames: [[UInt8]] = []
    /// The frames of one read routed, and `handOver`'s scratch (storage kept from read to read).
    private var routed: [ReceivedDatagram] = []
    private var group: [ReceivedDatagram] = []
    private var handlers: [ObjectIdentifier?] = []
    /// A STUN frame for a registered ufrag arrived: the connection belongs to a participant.
    private var claimed = false
    private var lastRead = NIODeadline.now()
    private var idleCheck: Scheduled<Void>?

    init(source: TransportAddress, listener: MediaTCPListener) {
        self.source = source
        self.listener = listener
    }

    func handlerAdded(context: ChannelHandlerContext) {
        scheduleCheck(context: context, in: listener.limits.firstCheckTimeout)
    }

    /// Closes the connection if it is still unclaimed after the first-check timeout, or has
    /// been silent for the idle timeout; otherwise checks again later.
    private func scheduleCheck(context: ChannelHandlerContext, in delay: TimeAmount) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        idleCheck = context.eventLoop.scheduleTask(in: delay) {
            let (handler, context) = loopBound.value
            let idle = handler.listener.limits.idleTimeout
            if !handler.claimed || NIODeadline.now() - handler.lastRead >= idle {
                MediaMetrics.tcpClosed(handler.claimed ? "idle" : "no_check")
                context.close(promise: nil)
            } else {
                handler.scheduleCheck(context: context, in: idle - (NIODeadline.now() - handler.lastRead))
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        lastRead = .now()
        do {
            try deframer.feed(buffer.readableBytesView, into: &frames)
        } catch {
            deliverFrames()
            MediaMetrics.tcpClosed("frame_too_long")
            context.close(promise: nil)
            return
        }
        deliverFrames()
    }

    private func deliverFrames() {
        defer { frames.removeAll(keepingCapacity: true) }
        let now = MediaTime.now()
        for frame in frames {
            MediaMetrics.datagramsIn.increment()
            MediaMetrics.bytesIn.increment(by: frame.count)
            guard let receiver = listener.router.route(frame, from: source) else {
                MediaMetrics.drop("unroutable")
                continue
            }
            if !claimed, PacketClass(frame) == .stun { claimed = true }
            routed.append(ReceivedDatagram(receiver: receiver, datagram: frame, source: source, time: now))
        }
        ReceivedDatagram.handOver(&routed, readerIsLight: routed.count <= MediaSocket.lightRead, group: &group,
                                  handlers: &handlers)
    }

    func channelInactive(context: ChannelHandlerContext) {
        idleCheck?.cancel()
        listener.connections.release(source)
        if deframer.emptyFrames > 0 { MediaMetrics.drop("tcp_empty_frame", count: deframer.emptyFrames) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        MediaMetrics.tcpClosed("error")
        context.close(promise: nil)
    }
}
