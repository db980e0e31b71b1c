import ChorusCore
import ChorusTestSupport
import DTLS
import Foundation
import Logging
import RTP
import Rooms

/// One room core and its client peers, joined and connected in process (ICE, DTLS, SRTP): the
/// setup the profiling scenarios share. It routes like the media port (each peer's address to
/// its call, fixed at join), answers every handshake datagram at once, and drops media to the
/// peers unread, so what a caller measures afterwards is the server's work alone.
public final class ConnectedRoom {
    public struct SetupError: Error, CustomStringConvertible {
        public var description: String
    }

    static let server = TransportAddress(ipv4: "10.0.0.1", port: 3478)!
    let core: RoomCore
    var output = RoomOutput()
    private(set) var now = MediaTime.seconds(1_000)
    private(set) var peers: [ClientPeer] = []
    /// Each peer's call: what the media port's router finds for its address (or its ufrag).
    private var calls: [TransportAddress: CallID] = [:]
    private var peersByAddress: [TransportAddress: ClientPeer] = [:]

    init(settings: RoomSettings, lanes: Int = 1) throws {
        let key = RoomKey(application: ApplicationKey(randomBytes: Array(repeating: 7, count: 16)),
                          room: try RoomID(validating: "bench"))
        let media = RoomCore.Media(dtls: try DTLSContext(certificate: DTLSCertificate()),
                                   candidateAddress: "10.0.0.1", candidatePort: 3478, lanes: lanes,
                                   laneRunner: ConcurrentLanes())
        core = RoomCore(key: key, settings: settings, media: media,
                        wallClock: WallClock(reference: now, date: Date(timeIntervalSince1970: 1_800_000_000)),
                        logger: Logger(label: "bench-room"))
    }

    /// The call of the peer joined `index`-th.
    static func callID(index: Int) -> CallID {
        var bytes = Array(repeating: UInt8(truncatingIfNeeded: index + 1), count: 16)
        bytes[0] = UInt8(truncatingIfNeeded: index >> 8)
        return CallID(guid: ApplicationKey(randomBytes: bytes).rawValue)
    }

    /// Joins `peer` as the `index`-th call and carries its handshake through.
    func join(_ peer: ClientPeer, index: Int) throws {
        let callId = Self.callID(index: index)
        let request = JoinRequest(callId: callId, userId: try UserID(validating: peer.name), displayName: nil,
                                  offer: try peer.offer())
        let answer = try core.join(request, now: now, into: &output)
        try peer.accept(answer: answer.sdp)
        peers.append(peer)
        peersByAddress[peer.address] = peer
        calls[peer.address] = callId
        carryOut()
        if let check = peer.connectivityCheck() { deliver(check.datagram, from: peer) }
        // The newcomer's timers only: polling every peer on every join would make a big
        // room's setup quadratic. (A big room's caller keeps the others' consent fresh.)
        advance(milliseconds: 20, polling: [peer])
    }

    /// Throws unless every peer finished its handshake.
    func requireConnected() throws {
        guard peers.allSatisfy(\.isConnected) else { throw SetupError(description: "a peer did not connect") }
    }

    /// One datagram from `peer` into the room; its transmits are carried out (handshakes answered).
    func deliver(_ datagram: [UInt8], from peer: ClientPeer) {
        guard let callId = calls[peer.address] else { return }
        core.receive(datagram, from: peer.address, callId: callId, now: now, into: &output)
        carryOut()
    }

    /// One datagram from `peer` into the room with the clock `nanoseconds` later; returns how
    /// many datagrams the room sent, which are dropped (the measured path).
    func receive(_ datagram: [UInt8], from peer: ClientPeer, callId: CallID, after nanoseconds: UInt64) -> Int {
        now = now.adding(nanoseconds: nanoseconds)
        core.receive(datagram, from: peer.address, callId: callId, now: now, into: &output)
        let sent = output.transmitCount
        output.removeAll()
        return sent
    }

    /// The room's tick at the next 20 ms; returns how many datagrams it sent, which are dropped.
    func tick() -> Int {
        now = now.adding(milliseconds: 20)
        core.tick(now: now, into: &output)
        let sent = output.transmitCount
        output.removeAll()
        return sent
    }

    /// The clock moved by `milliseconds` in 20 ms ticks, the peers polled and their datagrams
    /// (consent checks, RTCP) delivered: setup time, not measured.
    func advance(milliseconds: Int, polling: [ClientPeer]? = nil) {
        for _ in 0..<(milliseconds / 20) {
            now = now.adding(milliseconds: 20)
            core.tick(now: now, into: &output)
            carryOut()
            for peer in polling ?? peers {
                for transmit in peer.poll(now: now) { deliver(transmit.datagram, from: peer) }
            }
        }
    }

    /// Each handshake datagram to a peer handed to it, its replies delivered back at once,
    /// until nothing is left in flight.
    private func carryOut() {
        var queue = output.allTransmits
        output.removeAll()
        var next = 0
        while next < queue.count {
            let transmit = queue[next]
            next += 1
            // Media to the peers is dropped unread: only the handshake needs answers.
            guard PacketClass(transmit.datagram) == .stun || PacketClass(transmit.datagram) == .dtls,
                  let peer = peersByAddress[transmit.destination]
            else { continue }
            for reply in peer.receive(transmit.datagram, now: now) {
                guard let callId = calls[peer.address] else { continue }
                core.receive(reply.datagram, from: peer.address, callId: callId, now: now, into: &output)
                queue += output.allTransmits
                output.removeAll()
            }
        }
    }
}
