/// Where outgoing datagrams go. The media socket implements it; rooms and transports only see
/// this protocol, so they can be tested with no socket at all. Callable from any thread.
public protocol DatagramSink: Sendable {
    func send(_ datagram: [UInt8], to destination: TransportAddress)
    /// Several datagrams at once (a room's tick): a socket can hand them over in one hop and
    /// one vectored write instead of one cross-thread task each.
    func send(batch: [(datagram: [UInt8], destination: TransportAddress)])
}

extension DatagramSink {
    public func send(batch: [(datagram: [UInt8], destination: TransportAddress)]) {
        for item in batch { send(item.datagram, to: item.destination) }
    }
}

/// Collects what one room sends during its tick and passes it on as one batch at the end
/// (`flush`); outside a tick it passes each datagram straight through. Confined to the
/// room's queue (hence `@unchecked Sendable`), like the transports that write into it.
public final class BatchingSink: DatagramSink, @unchecked Sendable {
    public let target: any DatagramSink
    private var isBatching = false
    private var pending: [(datagram: [UInt8], destination: TransportAddress)] = []

    public init(target: any DatagramSink) {
        self.target = target
    }

    public func send(_ datagram: [UInt8], to destination: TransportAddress) {
        if isBatching {
            pending.append((datagram, destination))
        } else {
            target.send(datagram, to: destination)
        }
    }

    /// From now until `flush`, datagrams are held.
    public func begin() {
        isBatching = true
    }

    /// Hands the held datagrams over as one batch and stops holding.
    public func flush() {
        isBatching = false
        guard !pending.isEmpty else { return }
        target.send(batch: pending)
        pending.removeAll(keepingCapacity: true)
    }
}

/// Who gets a datagram once the router has found its participant. Implemented by the room
/// side: it hops onto the room's queue with the datagram.
public protocol DatagramReceiver: AnyObject, Sendable {
    func receive(_ datagram: [UInt8], from source: TransportAddress, at time: MediaTime)
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
