import CUDP
import ChorusCore
import Glibc
import NIOCore
import NIOPosix

/// One UDP socket for up to 64 participants of a shard (`chorus load --sockets shared`), each
/// participant on a loopback address of its own (127.a.b.c, the socket's one port), so
/// that to the server every participant is still its own 5-tuple: its own ICE check, DTLS
/// handshake and SRTP contexts.
///
/// Why: with a socket per participant, every packet the server sends on loopback wakes that
/// participant's socket (inside the server's `sendmmsg`, which runs the receive path) and costs
/// the generator one epoll event, two `recvmsg` calls and a trip through NIO's pipeline; at a
/// few thousand listeners that is most of the generator's CPU. On a shared socket the kernel
/// queues a tick's packets for 64 participants on one socket and the generator reads them in
/// one `recvmmsg`. The participant is
/// told by the packet's destination address (IP_PKTINFO); what it sends leaves from its own
/// address (IP_PKTINFO on `sendmsg`, `chorus_udp_send_batch`), batched per task of the loop.
///
/// Bound to 0.0.0.0 (a socket bound to 127.0.0.1 receives nothing sent to 127.0.0.2), so only
/// for a server on loopback. Immutable (a channel, a port, a duplicated descriptor) but for
/// its outbox, which only its shard's loop touches (`NIOLoopBoundBox`): `Sendable`.
final class LoadSharedSocket: Sendable {
    /// Participants per socket. One socket per thread for everyone made the server's two lanes
    /// contend for its receive queue's lock on every packet (the server's CPU went up by about
    /// what the generator saved); 64 keeps a tick's burst for one socket to one `recvmmsg`.
    static let participantsPerSocket = 64
    let shard: LoadShard
    let channel: any Channel
    let port: Int
    /// A duplicate of the socket NIO reads, for sending from the loop without NIO's write path.
    private let descriptor: Int32
    /// What the loop's current task has queued to send (`send`).
    private let outbox: NIOLoopBoundBox<LoadSharedOutbox>

    private init(shard: LoadShard, channel: any Channel, port: Int, descriptor: Int32) {
        self.shard = shard
        self.channel = channel
        self.port = port
        self.descriptor = descriptor
        outbox = NIOLoopBoundBox.makeBoxSendingValue(LoadSharedOutbox(), eventLoop: shard.loop)
    }

    deinit {
        close(descriptor)
    }

    /// A loopback address for the `index`th participant of a run: 127.a.b.c, never .0 or .255
    /// in the last byte. `raw` is the address in network byte order, as IP_PKTINFO gives it.
    struct Address: Sendable {
        let bytes: (UInt8, UInt8, UInt8)
        var text: String { "127.\(bytes.0).\(bytes.1).\(bytes.2)" }
        var raw: UInt32 {
            (UInt32(127) << 24 | UInt32(bytes.0) << 16 | UInt32(bytes.1) << 8 | UInt32(bytes.2)).bigEndian
        }

        init(index: Int) {
            let n = max(0, index)
            bytes = (UInt8(truncatingIfNeeded: 1 + n / (254 * 256)), UInt8(truncatingIfNeeded: n / 254 % 256),
                     UInt8(truncatingIfNeeded: 1 + n % 254))
        }
    }

    /// Opens a socket on the shard's loop, reading with `recvmmsg` (64 a call) into `shard`'s
    /// participants by destination address.
    static func open(for shard: LoadShard) async throws -> LoadSharedSocket {
        let socket = try boundSocket()
        let copy = dup(socket)
        guard copy >= 0 else {
            close(socket)
            throw LoadHTTP.Failure(description: "dup: errno \(errno)")
        }
        do {
            let channel = try await DatagramBootstrap(group: shard.loop)
                // With vector reads the allocator must hold 64 datagrams, or each is truncated.
                .channelOption(.datagramVectorReadMessageCount, value: 64)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 64 * 2048))
                .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
                .channelOption(.socketOption(.so_sndbuf), value: 4 << 20)
                .channelOption(.receivePacketInfo, value: true)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(LoadSharedDatagramHandler(shard: shard))
                    }
                }
                .withBoundSocket(socket)
                .get()
            return LoadSharedSocket(shard: shard, channel: channel, port: channel.localAddress?.port ?? 0, descriptor: copy)
        } catch {
            close(copy)
            throw error
        }
    }

    /// A non-blocking UDP socket on 0.0.0.0 and a port the kernel picks.
    private static func boundSocket() throws -> Int32 {
        let socket = try SocketAddress(ipAddress: "0.0.0.0", port: 0).withSockAddr {
            chorus_udp_bound_socket($0, UInt32($1))
        }
        guard socket >= 0 else { throw LoadHTTP.Failure(description: "UDP socket on 0.0.0.0: errno \(-socket)") }
        return socket
    }

    /// Queues `bytes` for `destination` from `source`, on the shard's loop; what the loop's
    /// current task (a tick over the shard's participants, a read) queues leaves in one
    /// `sendmmsg` when it is done (`flush`: the tick calls it, another task schedules it).
    /// Sent one by one, 3,000 participants made about 11,000 system calls a second; the
    /// kernel's work per datagram (the loopback receive path) stays.
    func send(_ bytes: [UInt8], from source: Address, to destination: SocketAddress) {
        guard case .v4(let server) = destination else { return }  // a shared socket is IPv4 loopback
        guard shard.loop.inEventLoop else {
            shard.loop.execute { [self] in send(bytes, from: source, to: destination) }
            return
        }
        let outbox = self.outbox.value
        outbox.add(bytes, from: source, to: server.address)
        guard !outbox.flushScheduled else { return }
        outbox.flushScheduled = true
        shard.loop.execute { [self] in flush() }
    }

    /// Sends what is queued (IP_PKTINFO gives each its participant's source address), on the
    /// loop: at the end of the shard's tick, or of the task that queued it. A full send buffer
    /// drops the rest, as a real-time sender would.
    func flush() {
        let outbox = self.outbox.value
        outbox.flushScheduled = false
        outbox.send(on: descriptor)
    }
}

/// A shared socket's datagrams queued on its shard's loop: their bytes back to back, and each
/// one's place, source and destination. Not `Sendable`: only its loop touches it
/// (`NIOLoopBoundBox`); the storage is kept from flush to flush.
final class LoadSharedOutbox {
    private var bytes: [UInt8] = []
    private var queued: [(offset: Int, length: Int, source: LoadSharedSocket.Address)] = []
    private var destinations: [sockaddr_in] = []
    private var datagrams: [chorus_udp_datagram] = []
    var flushScheduled = false

    func add(_ datagram: [UInt8], from source: LoadSharedSocket.Address, to destination: sockaddr_in) {
        queued.append((bytes.count, datagram.count, source))
        bytes.append(contentsOf: datagram)
        destinations.append(destination)
    }

    /// Sends every queued datagram on `descriptor` (`chorus_udp_send_batch`), then empties.
    func send(on descriptor: Int32) {
        defer {
            bytes.removeAll(keepingCapacity: true)
            queued.removeAll(keepingCapacity: true)
            destinations.removeAll(keepingCapacity: true)
            datagrams.removeAll(keepingCapacity: true)
        }
        guard !queued.isEmpty else { return }
        bytes.withUnsafeBufferPointer { bytes in
            destinations.withUnsafeBufferPointer { destinations in
                guard let addresses = destinations.baseAddress else { return }
                for (index, entry) in queued.enumerated() {
                    var datagram = chorus_udp_datagram()
                    datagram.bytes = bytes.baseAddress.map { $0 + entry.offset }  // nil: only empty datagrams
                    datagram.length = entry.length
                    datagram.address = UnsafeRawPointer(addresses + index)
                    datagram.address_length = UInt32(MemoryLayout<sockaddr_in>.size)
                    datagram.source_family = 4
                    datagram.source.0 = 127
                    datagram.source.1 = entry.source.bytes.0
                    datagram.source.2 = entry.source.bytes.1
                    datagram.source.3 = entry.source.bytes.2
                    datagrams.append(datagram)
                }
                _ = chorus_udp_send_batch(descriptor, datagrams, datagrams.count, nil)
            }
        }
    }
}

/// Hands each datagram of a shard's shared socket to the participant whose loopback address it
/// was sent to (IP_PKTINFO), on the shard's loop; one for another address is dropped.
final class LoadSharedDatagramHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let shard: LoadShard

    init(shard: LoadShard) {
        self.shard = shard
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var envelope = unwrapInboundIn(data)
        guard case .v4(let local)? = envelope.metadata?.packetInfo?.destinationAddress,
              let participant = shard.participant(at: local.address.sin_addr.s_addr),
              let bytes = envelope.data.readBytes(length: envelope.data.readableBytes)
        else { return }
        participant.receive(bytes, now: .now())
    }
}
