/// One datagram to send and where: what the sans-IO engines (`PeerTransport`, the room core)
/// produce instead of writing to a socket. Their owner collects them in an array it reuses and
/// hands them to a `DatagramSink` in one batch.
public typealias Transmit = (datagram: [UInt8], destination: TransportAddress)

/// Where outgoing datagrams go: the socket side. The media socket implements it; the rooms
/// hand it what their cores produced, so the engines themselves never hold a sink and can be
/// tested with no socket at all. Callable from any thread.
public protocol DatagramSink: Sendable {
    func send(_ datagram: [UInt8], to destination: TransportAddress)
    /// Several datagrams at once (a room's tick): a socket can hand them over in one vectored
    /// write instead of one call each. The sink does not keep `batch` after it returns.
    func send(batch: [Transmit])
}

extension DatagramSink {
    public func send(batch: [Transmit]) {
        for item in batch { send(item.datagram, to: item.destination) }
    }
}

/// One routed datagram of a read, as the socket's reader hands it over: for whom, the bytes,
/// where they came from and when they were read.
public struct ReceivedDatagram: Sendable {
    public var receiver: any DatagramReceiver
    public var datagram: [UInt8]
    public var source: TransportAddress
    public var time: MediaTime

    public init(receiver: any DatagramReceiver, datagram: [UInt8], source: TransportAddress, time: MediaTime) {
        self.receiver = receiver
        self.datagram = datagram
        self.source = source
        self.time = time
    }
}

/// Who gets a datagram once the router has found its participant. Implemented by the room
/// side: it hops onto the room's queue with the datagrams, or runs them on the caller's thread.
public protocol DatagramReceiver: AnyObject, Sendable {
    /// Who runs this receiver's datagrams (its room): a read's datagrams for receivers with one
    /// handler are handed to one of them in one call (`ReceivedDatagram.handOver`).
    var handler: ObjectIdentifier { get }
    /// `datagrams`: a read's datagrams for receivers with this receiver's `handler`, in arrival
    /// order. `readerIsLight`: the socket's reader met few datagrams in this read, so it may
    /// handle them on its own thread instead of waking another; a busy reader says false and
    /// only hands datagrams over.
    func receive(_ datagrams: ArraySlice<ReceivedDatagram>, readerIsLight: Bool)
    /// True when this receiver's datagrams should be handled on arrival (video is forwarded
    /// then), not once per room tick: the socket's reader then stays prompt for a while.
    var wantsPromptReads: Bool { get }
}

extension DatagramReceiver {
    public var handler: ObjectIdentifier { ObjectIdentifier(self) }
    public var wantsPromptReads: Bool { false }
}

extension ReceivedDatagram {
    /// Hands a read's datagrams over, one call per handler with that handler's datagrams in
    /// arrival order (so a room gets one hop, and one batch of replies, per read), and empties
    /// `read`. `group` and `handlers` are the caller's scratch storage, kept from read to read.
    public static func handOver(_ read: inout [ReceivedDatagram], readerIsLight: Bool,
                                group: inout [ReceivedDatagram], handlers: inout [ObjectIdentifier?]) {
        handlers.removeAll(keepingCapacity: true)
        for item in read { handlers.append(item.receiver.handler) }
        for index in read.indices {
            guard let handler = handlers[index] else { continue }  // handed over with an earlier one
            group.removeAll(keepingCapacity: true)
            for later in index..<read.count where handlers[later] == handler {
                group.append(read[later])
                handlers[later] = nil
            }
            read[index].receiver.receive(group[...], readerIsLight: readerIsLight)
        }
        group.removeAll(keepingCapacity: true)
        read.removeAll(keepingCapacity: true)
    }
}

/// The demultiplexing table of the one media port, as the rooms see it: STUN is routed by the
/// local ICE ufrag (the first half of USERNAME), everything else by source address once ICE
/// has validated that address. Both lookups are O(1).
public protocol MediaRouting: Sendable {
    /// Datagrams whose STUN USERNAME starts with `ufrag:` go to `receiver`.
    func register(ufrag: String, receiver: any DatagramReceiver)
    /// Non-STUN datagrams from `address` go to `receiver` (after ICE nomination).
    func bind(_ address: TransportAddress, to receiver: any DatagramReceiver)
    /// Forgets the ufrag and every address bound to `receiver`.
    func unregister(ufrag: String)
    func unbind(_ address: TransportAddress)
    /// RTP/RTCP from an unbound address whose sender SSRC is `ssrc` goes to `receiver`, which
    /// must authenticate it and check the address before using it (NAT rebinding).
    func register(ssrc: SSRC, receiver: any DatagramReceiver)
    func unregister(ssrc: SSRC)
}

/// RFC 7983 §7 demultiplexing by the first byte of a datagram (with RFC 5761 §4 to tell RTCP
/// from RTP by the second byte).
public enum PacketClass: Equatable, Sendable {
    case stun, dtls, rtp, rtcp, unknown

    @inlinable
    public init(_ datagram: [UInt8]) {
        guard let first = datagram.first else {
            self = .unknown
            return
        }
        switch first {
        case 0...3: self = .stun
        case 20...63: self = .dtls
        case 128...191:
            guard datagram.count >= 2 else {
                self = .unknown
                return
            }
            // RTCP packet types 192–223 collide with RTP payload types 64–95 with the marker bit
            // set; RFC 5761 §4 reserves those for RTCP when multiplexing.
            self = (192...223).contains(datagram[1]) ? .rtcp : .rtp
        default: self = .unknown
        }
    }
}
