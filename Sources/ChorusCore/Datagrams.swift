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

/// Who gets a datagram once the router has found its participant. Implemented by the room
/// side: it hops onto the room's queue with the datagram, or runs it on the caller's thread.
public protocol DatagramReceiver: AnyObject, Sendable {
    /// `readerIsLight`: the socket's reader met few datagrams in its last read, so it may
    /// handle this one on its own thread instead of waking another; a busy reader says false
    /// and only hands datagrams over.
    func receive(_ datagram: [UInt8], from source: TransportAddress, at time: MediaTime, readerIsLight: Bool)
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
