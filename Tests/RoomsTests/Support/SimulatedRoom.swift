import AudioMixer
import ChorusCore
import ChorusTestSupport
import DTLS
import Foundation
import Logging
import RTP
import Rooms
import STUN

/// A `RoomCore` with client peers on a simulated clock and network: what the `Room` actor and
/// the media port do in production, done by the test in process and deterministically. The
/// router is emulated as `DatagramRouter` works: STUN by the ufrag the core registered, other
/// datagrams only from an address the core bound.
final class SimulatedRoom {
    static let server = TransportAddress(ipv4: "10.0.0.1", port: 3478)!
    let core: RoomCore
    var output = RoomOutput()
    private(set) var now = MediaTime.seconds(1_000)
    var network: SimulatedNetwork
    private(set) var peers: [String: ClientPeer] = [:]
    private(set) var callIds: [String: CallID] = [:]
    private(set) var events: [TimedRoomEvent] = []
    /// The recording's full-mix file and each participant's track file, as the shell writes them.
    private(set) var recordedMix: [UInt8] = []
    private(set) var recordedTracks: [CallID: [UInt8]] = [:]
    private(set) var closedTracks: Set<CallID> = []
    /// Each audio peer's microphone (silent until given a tone), sending while `talk` runs.
    var microphones: [String: PeerMicrophone] = [:]
    /// Members of the plain-RTP kind (`joinPhone`), sending while `talk` runs.
    private(set) var phones: [String: PCMPhone] = [:]
    private var ufrags: [String: CallID] = [:]
    private var bound: [TransportAddress: CallID] = [:]
    private var bySSRC: [SSRC: CallID] = [:]
    /// Datagrams the emulated router dropped (no ufrag or address known).
    private(set) var unrouted = 0
    private var nextTickAt: MediaTime
    private var nextPort: UInt16 = 40_000
    private var seed: UInt64

    init(settings: RoomSettings = .defaults, seed: UInt64 = 1, lanes: Int = 1, audio: AudioEncoding = AudioEncoding()) throws {
        let key = RoomKey(application: ApplicationKey(randomBytes: Array(repeating: 7, count: 16)),
                          room: try RoomID(validating: "simulated"))
        let media = RoomCore.Media(dtls: try DTLSContext(certificate: DTLSCertificate()),
                                   candidateAddress: "10.0.0.1", candidatePort: 3478, audio: audio, lanes: lanes)
        core = RoomCore(key: key, settings: settings, media: media,
                        wallClock: WallClock(reference: now, date: Date(timeIntervalSince1970: 1_800_000_000)),
                        logger: Logger(label: "simulated-room"))
        network = SimulatedNetwork(seed: seed)
        nextTickAt = now.adding(milliseconds: 20)
        self.seed = seed
    }

    /// Joins a peer with `fixture`'s offer, then lets ICE and DTLS complete.
    @discardableResult
    func join(_ name: String, fixture: String = "aiortc-audio-only.sdp") throws -> ClientPeer {
        nextPort += 1
        seed &+= 1
        let peer = try ClientPeer(name: name, port: nextPort, fixture: fixture, seed: seed)
        let callId = CallID(guid: ApplicationKey(randomBytes: [UInt8(nextPort >> 8), UInt8(nextPort & 0xFF)]
            + Array(repeating: UInt8(nextPort & 0xFF), count: 14)).rawValue)
        let request = JoinRequest(callId: callId, userId: try UserID(validating: name), displayName: nil,
                                  offer: try peer.offer())
        let answer = try core.join(request, now: now, into: &output)
        carryOut()
        try peer.accept(answer: answer.sdp)
        peers[name] = peer
        callIds[name] = callId
        microphones[name] = try PeerMicrophone(frequency: nil)
        if let check = peer.connectivityCheck() { network.send(check.datagram, from: peer.address, to: check.destination, now: now) }
        run(milliseconds: 100)
        return peer
    }

    /// Joins a plain-RTP member speaking L16 at `clockRate` (no ICE, DTLS or SRTP: it is
    /// connected at the room's first poll), through the same seam as any member.
    @discardableResult
    func joinPhone(_ name: String, clockRate: Int = 8_000) throws -> PCMPhone {
        nextPort += 1
        let phone = PCMPhone(name: name, address: TransportAddress(ipv4: "10.0.0.3", port: nextPort)!, clockRate: clockRate)
        let callId = CallID(guid: ApplicationKey(randomBytes: [UInt8(nextPort >> 8), UInt8(nextPort & 0xFF), 0xFE]
            + Array(repeating: UInt8(nextPort & 0xFF), count: 13)).rawValue)
        let connection = PlainRTPConnection(remote: phone.address, rtcpSSRC: phone.mixSSRC, now: now)
        try core.admit(MemberJoin(callId: callId, userId: try UserID(validating: name), displayName: nil,
                                  connection: connection, media: phone.media), now: now, into: &output)
        carryOut()
        phones[name] = phone
        callIds[name] = callId
        run(milliseconds: 40)
        return phone
    }

    /// Advances the clock `milliseconds` in 1 ms steps: arrivals are delivered, the room's
    /// timer fires every 20 ms, and `each` runs at every tick time before the room's tick (the
    /// peers' media senders).
    func run(milliseconds: Int, each: ((MediaTime) -> Void)? = nil) {
        for _ in 0..<milliseconds {
            now = now.adding(milliseconds: 1)
            deliverArrivals()
            if now >= nextTickAt {
                each?(now)
                core.tick(now: now, into: &output)
                carryOut()
                for peer in peers.values {
                    for transmit in peer.poll(now: now) { send(transmit, from: peer) }
                }
                nextTickAt = nextTickAt.adding(milliseconds: 20)
            }
        }
    }

    /// The room's queue stalls for `milliseconds` (an overloaded machine): time passes, nothing
    /// is delivered or ticked; the next `run` catches up as the room's timer would.
    func stall(milliseconds: Int) {
        now = now.adding(milliseconds: UInt64(milliseconds))
        while nextTickAt.adding(milliseconds: 20) <= now { nextTickAt = nextTickAt.adding(milliseconds: 20) }
    }

    /// Runs `milliseconds` with every microphone sending a packet per tick (`each` first, as in `run`).
    func talk(milliseconds: Int, each: ((MediaTime) -> Void)? = nil) {
        run(milliseconds: milliseconds) { now in
            each?(now)
            for (name, peer) in self.peers {
                guard let packet = self.microphones[name]?.nextPacket(from: peer) else { continue }
                self.send(packet, from: peer)
            }
            for phone in self.phones.values {
                let packet = phone.nextPacket(to: Self.server)
                self.network.send(packet.datagram, from: phone.address, to: packet.destination, now: now)
            }
        }
    }

    /// Gives `name` a tone to say (nil: silence); its RTP stream continues.
    func say(_ name: String, frequency: Double?) {
        microphones[name]?.tone = frequency.map { TestTone(frequency: $0, amplitude: 0.3) }
    }

    func send(_ transmit: Transmit, from peer: ClientPeer) {
        network.send(transmit.datagram, from: peer.address, to: transmit.destination, now: now)
    }

    private func deliverArrivals() {
        for arrival in network.arrivals(by: now) {
            if arrival.destination == Self.server {
                deliverToServer(arrival.datagram, from: arrival.source)
            } else if let peer = peers.values.first(where: { $0.address == arrival.destination }) {
                for transmit in peer.receive(arrival.datagram, now: now) { send(transmit, from: peer) }
            } else if let phone = phones.values.first(where: { $0.address == arrival.destination }) {
                phone.receive(arrival.datagram)
            }
        }
    }

    /// The media port's router, then the core.
    private func deliverToServer(_ datagram: [UInt8], from source: TransportAddress) {
        let callId: CallID?
        if PacketClass(datagram) == .stun, let ufrag = STUNMessage.peekLocalUfragString(datagram) {
            callId = ufrags[ufrag]
        } else {
            // As DatagramRouter: by address, else RTP/RTCP by sender SSRC.
            let kind = PacketClass(datagram)
            let offset = kind == .rtp ? 8 : 4
            let ssrc = (kind == .rtp || kind == .rtcp) && datagram.count >= offset + 4
                ? SSRC(datagram.uint32(at: offset)) : nil
            callId = bound[source] ?? ssrc.flatMap { bySSRC[$0] }
        }
        guard let callId else {
            unrouted += 1
            return
        }
        core.receive(datagram, from: source, callId: callId, now: now, into: &output)
        carryOut()
    }

    /// Carries out the core's output as the `Room` shell does.
    func carryOut() {
        for transmit in output.allTransmits {
            network.send(transmit.datagram, from: Self.server, to: transmit.destination, now: now)
        }
        for change in output.routing {
            switch change {
            case .register(let ufrag, let callId): ufrags[ufrag] = callId
            case .bind(let address, let callId): bound[address] = callId
            case .unregister(let ufrag, _): ufrags[ufrag] = nil
            case .unbind(let address): bound[address] = nil
            case .registerSSRCs(let ssrcs, let callId): for ssrc in ssrcs { bySSRC[ssrc] = callId }
            case .unregisterSSRCs(let ssrcs): for ssrc in ssrcs { bySSRC[ssrc] = nil }
            }
        }
        events += output.events
        for write in output.recordingWrites { recordedMix += write }
        for write in output.trackWrites {
            recordedTracks[write.callId, default: []] += write.bytes
            if write.closes { closedTracks.insert(write.callId) }
        }
        output.removeAll()
    }

    func end(_ name: String, cause: EndCause) -> Bool {
        guard let callId = callIds[name] else { return false }
        let ended = core.end(callId, cause: cause, now: now, into: &output)
        carryOut()
        return ended
    }

    func callId(_ name: String) -> CallID { callIds[name]! }

    func snapshot(_ name: String) -> ParticipantSnapshot? { core.participant(callId(name)) }

    /// Names of the events so far, with the participant's name for the ones about someone.
    func eventNames(_ filter: Set<String>? = nil) -> [String] {
        let names = Dictionary(uniqueKeysWithValues: callIds.map { ($0.value.rawValue, $0.key) })
        return events.compactMap { timed in
            let event = timed.event
            guard filter?.contains(event.name.rawValue) ?? true else { return nil }
            if let id = event.callId, let name = names[id.rawValue] { return "\(event.name.rawValue):\(name)" }
            return event.name.rawValue
        }
    }
}
