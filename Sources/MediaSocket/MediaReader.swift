import CUDP
import ChorusCore
import Glibc
import Synchronization

/// The media port's reader: a thread of its own that waits on the UDP socket (poll) and reads
/// it with recvmmsg(2), 64 datagrams a call; routes each datagram (`DatagramRouter`) and hands
/// each call's datagrams to their rooms, one call per room (`ReceivedDatagram.handOver`).
/// When the port carries only audio and is not busy, it reads once per room tick instead of on
/// each datagram (`ReadSchedule`); each datagram keeps its kernel arrival time either way.
/// Right after its read before each tick it fires the ticks of the rooms in its `TickList`
/// (small rooms), so one wake-up serves both.
///
/// It replaced a SwiftNIO datagram channel, which per datagram made a `ByteBuffer`, an
/// `AddressedEnvelope` and a `SocketAddress` (formatting the peer's host text with inet_ntop)
/// and passed it down a pipeline: in a profile of three video meetings of five, the channel's
/// read path outside the kernel was 15 % of the server's samples. Here a datagram costs its
/// one copy into the `[UInt8]` the rooms keep, and the counters are bumped once per call.
///
/// Driven by `start()` and `stop()` (which joins the thread and then closes the socket, so no
/// read runs on a closed or reused descriptor). `@unchecked Sendable`: the buffers, the
/// scratch arrays, the schedule and the tick firing are used only by the reader thread,
/// between `start` and the join in `stop`; everything else is immutable or atomic.
final class MediaReader: @unchecked Sendable {
    /// The socket, owned: closed by `stop` after the thread is gone.
    let socket: Int32
    private let wake: Int32
    private let router: DatagramRouter
    private let locals: LocalAddressTable?
    private let stopping = Atomic<Bool>(false)
    private let thread = Mutex<pthread_t?>(nil)

    /// Datagrams per recvmmsg(2) call, and the size of each one's buffer: longer datagrams are
    /// dropped (counted as truncated); WebRTC keeps its packets under ~1,200 bytes.
    static let batch = 64
    static let slotSize = 2_048
    private let buffers: UnsafeMutablePointer<UInt8>
    private let received: UnsafeMutablePointer<chorus_udp_received>
    /// A read's routed datagrams, and `handOver`'s scratch (storage kept from read to read).
    private var pending: [ReceivedDatagram] = []
    private var group: [ReceivedDatagram] = []
    private var handlers: [ObjectIdentifier?] = []
    private var schedule = ReadSchedule()
    /// The rooms whose ticks this reader fires after its read before each tick, and the
    /// reader thread's state of that firing.
    private let tickList: TickList?
    private var ticks: TickFiring?

    /// Takes ownership of `socket` (a bound, non-blocking UDP socket). With `locals`, the
    /// socket is asked for each datagram's local address (IP_PKTINFO / IPV6_PKTINFO).
    init(socket: Int32, isIPv6: Bool, router: DatagramRouter, locals: LocalAddressTable?,
         ticks: TickList? = nil) throws(MediaSocketError) {
        let stamped = chorus_udp_enable_arrival_times(socket)
        guard stamped == 0 else { throw .socket("arrival times on the UDP socket", -stamped) }
        if locals != nil {
            let result = chorus_udp_enable_packet_info(socket, isIPv6 ? 1 : 0)
            guard result == 0 else { throw .socket("packet information on the UDP socket", -result) }
        }
        let wake = chorus_udp_wake_descriptor()
        guard wake >= 0 else { throw .socket("eventfd", -wake) }
        self.socket = socket
        self.wake = wake
        self.router = router
        self.locals = locals
        tickList = ticks
        self.ticks = ticks.map(TickFiring.init)
        buffers = .allocate(capacity: Self.batch * Self.slotSize)
        received = .allocate(capacity: Self.batch)
        received.initialize(repeating: chorus_udp_received(), count: Self.batch)
    }

    deinit {
        buffers.deallocate()
        received.deallocate()
        close(wake)
    }

    /// Starts the reader thread ("chorus-media-rx").
    func start() throws(MediaSocketError) {
        var handle = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let result = pthread_create(&handle, nil, { context in
            guard let context else { return nil }
            let reader = Unmanaged<MediaReader>.fromOpaque(context).takeRetainedValue()
            reader.run()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<MediaReader>.fromOpaque(context).release()
            throw .socket("pthread_create for the media reader", result)
        }
        thread.withLock { $0 = handle }
    }

    /// Ends the reader thread, waits for it, and closes the socket. Idempotent.
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        tickList?.setWaker(nil)
        chorus_udp_wake(wake)
        if let handle = thread.withLock({ $0 }) { pthread_join(handle, nil) }
        close(socket)
    }

    /// Reads while datagrams wait, fires the rooms' ticks when their point has come (after the
    /// read, so a room has its datagrams before its tick), then sleeps: in poll until the socket
    /// is readable again or the next ticks are due, or, while the schedule reads once per tick,
    /// until its next read point (where the ticks are due as well).
    private func run() {
        chorus_udp_name_thread("chorus-media-rx")
        let wake = self.wake
        tickList?.setWaker { chorus_udp_wake(wake) }
        while !stopping.load(ordering: .acquiring) {
            let count = chorus_udp_receive_batch(socket, buffers, Self.slotSize, received, Self.batch)
            if count > 0 {
                handle(Int(count))
            } else if count < 0 {
                // An ICMP error queued on the socket surfaces once; a UDP server reads on.
                MediaMetrics.drop("socket_error")
            }
            var now = MediaTime.now().nanoseconds
            ticks?.fireIfDue(now: now) { MediaTime.now().nanoseconds }
            if Int(count) == Self.batch { continue }  // more may be waiting
            now = MediaTime.now().nanoseconds
            // A firing that ran past its next point fires again at once (a zero wait).
            let tickWait = ticks?.isActive() == true ? ticks.map { $0.next > now ? $0.next - now : 0 } : nil
            if let next = schedule.nextRead(after: now) {
                if chorus_udp_sleep(wake, min(next - now, tickWait ?? .max)) < 0 { usleep(1_000) }
            } else if chorus_udp_wait_readable(socket, wake, tickWait.map { Int64($0) } ?? -1) < 0 {
                usleep(1_000)
            }
        }
    }

    /// Routes one call's datagrams and hands them over.
    private func handle(_ count: Int) {
        let now = MediaTime.now()
        let clock = ArrivalClock(now: now, realtime: chorus_udp_realtime_ns())
        let tickAligned = schedule.isTickAligned(at: now.nanoseconds)
        var bytesIn = 0
        var prompt = false
        for index in 0..<count {
            let datagram = received[index]
            bytesIn += Int(datagram.length)
            guard datagram.truncated == 0 else {
                MediaMetrics.drop("truncated")
                continue
            }
            let base = locals?.base(for: LocalAddressTable.Entry(datagram)) ?? 0
            guard let source = Self.source(of: datagram, base: base) else {
                MediaMetrics.drop("bad_source")
                continue
            }
            let bytes = Array(UnsafeBufferPointer(start: buffers + index * Self.slotSize, count: Int(datagram.length)))
            guard let receiver = router.route(bytes, from: source) else {
                MediaMetrics.drop("unroutable")
                continue
            }
            // A DTLS handshake's flights should not wait for a tick.
            if receiver.wantsPromptReads || PacketClass(bytes) == .dtls { prompt = true }
            pending.append(ReceivedDatagram(receiver: receiver, datagram: bytes, source: source,
                                            time: clock.arrival(datagram.arrival_ns)))
        }
        MediaMetrics.datagramsIn.increment(by: count)
        MediaMetrics.bytesIn.increment(by: bytesIn)
        (tickAligned ? MediaMetrics.tickAlignedReads : MediaMetrics.promptReads).increment()
        schedule.noteRead(count: count, prompt: prompt, full: count == Self.batch, at: now.nanoseconds)
        let light = pending.count <= (tickAligned ? MediaSocket.tickAlignedLightRead : MediaSocket.lightRead)
        ReceivedDatagram.handOver(&pending, readerIsLight: light, group: &group, handlers: &handlers)
    }

    /// The peer's address of a datagram read; nil for a family other than IPv4 and IPv6.
    static func source(of datagram: chorus_udp_received, base: UInt8) -> TransportAddress? {
        let (high, low, port) = (datagram.peer_high, datagram.peer_low, datagram.peer_port)
        switch datagram.peer_family {
        case 4:
            return TransportAddress(ipv4: UInt32(truncatingIfNeeded: low), port: port, base: base)
        case 6:
            return TransportAddress(socketIPv6High: high, low: low, port: port, base: base)
        default:
            return nil
        }
    }
}

/// Turns the kernel's arrival stamps (CLOCK_REALTIME) into the rooms' monotonic `MediaTime`,
/// with both clocks read once per read. A stamp from the future, from more than a second ago
/// (the wall clock was stepped) or missing counts as arriving now.
struct ArrivalClock {
    let now: MediaTime
    let realtime: UInt64

    func arrival(_ stamp: UInt64) -> MediaTime {
        guard stamp != 0, stamp <= realtime, realtime - stamp < 1_000_000_000 else { return now }
        return MediaTime(nanoseconds: now.nanoseconds - min(now.nanoseconds, realtime - stamp))
    }
}
