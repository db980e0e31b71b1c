import ChorusCore
import ChorusTestSupport

/// Links between client peers and the room on a simulated clock: each datagram arrives after a
/// base delay plus seeded jitter (which reorders), and SRTP/SRTCP may be lost with a seeded
/// probability per sender. Handshake datagrams (STUN, DTLS) are never lost: OpenSSL keeps its
/// own retransmission clock, which a simulated clock cannot drive.
struct SimulatedNetwork {
    struct Link {
        var lossPercent = 0.0
        var delayMilliseconds: UInt64 = 5
        var jitterMilliseconds: UInt64 = 0
    }

    struct InFlight {
        let deliverAt: MediaTime
        let order: Int
        let datagram: [UInt8]
        let source: TransportAddress
        let destination: TransportAddress
    }

    var random: SplitMix64
    /// Links by sending address; unlisted senders get a clean 5 ms link.
    var links: [TransportAddress: Link] = [:]
    private(set) var inFlight: [InFlight] = []
    private var order = 0
    private(set) var lost = 0

    init(seed: UInt64) {
        random = SplitMix64(seed: seed)
    }

    mutating func send(_ datagram: [UInt8], from source: TransportAddress, to destination: TransportAddress,
                       now: MediaTime) {
        let link = links[source] ?? Link()
        let media = PacketClass(datagram) == .rtp || PacketClass(datagram) == .rtcp
        if media, link.lossPercent > 0, Double.random(in: 0..<100, using: &random) < link.lossPercent {
            lost += 1
            return
        }
        let jitter = link.jitterMilliseconds == 0 ? 0 : UInt64.random(in: 0...link.jitterMilliseconds, using: &random)
        order += 1
        inFlight.append(InFlight(deliverAt: now.adding(milliseconds: link.delayMilliseconds + jitter), order: order,
                                 datagram: datagram, source: source, destination: destination))
    }

    /// The datagrams that have arrived by `now`, in arrival order.
    mutating func arrivals(by now: MediaTime) -> [InFlight] {
        let due = inFlight.filter { $0.deliverAt <= now }
        guard !due.isEmpty else { return [] }
        inFlight.removeAll { $0.deliverAt <= now }
        return due.sorted { ($0.deliverAt, $0.order) < ($1.deliverAt, $1.order) }
    }
}
