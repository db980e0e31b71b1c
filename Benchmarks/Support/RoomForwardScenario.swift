import ChorusCore
import ChorusTestSupport
import DTLS
import Foundation
import Logging
import RTP
import Rooms

/// One room core with one camera publisher and `subscribers` viewers, all connected (client
/// peers over ICE, DTLS and SRTP, in process), every viewer's first slot showing the camera:
/// the forward path of one publisher packet, measured through `RoomCore.receive` as the room's
/// queue runs it (SRTP unprotect, RTP parse, simulcast classification, cache, the slot rewrite
/// and each viewer's SRTP protect and transmit). The shell's socket write is not included.
///
/// - `plain`: aiortc's offers (one VP8 stream, no transport-cc, REMB);
/// - `simulcastTransportCC`: Chromium's (the publisher's simulcast q/h/f with RIDs, every
///   participant with transport-cc): the publisher's transport-wide numbers are recorded for
///   feedback, each forwarded packet gets the viewer's transport-wide number stamped and goes
///   into its send-side estimator's history.
///
/// The packets forwarded are 1,100-byte VP8 delta frames of the lowest layer (which every
/// viewer's slot starts on, since no estimate is known). Setup and packet building happen
/// outside what a caller measures (`packets(count:)`, then `forward(_:)` per packet).
public final class RoomForwardScenario {
    /// Which offers the peers make.
    public enum Kind: String, CaseIterable, Sendable {
        case plain
        case simulcastTransportCC = "simulcast+transport-cc"
    }

    public struct SetupError: Error, CustomStringConvertible {
        public var description: String
    }

    static let server = TransportAddress(ipv4: "10.0.0.1", port: 3478)!
    public let kind: Kind
    public let subscribers: Int
    let core: RoomCore
    var output = RoomOutput()
    private(set) var now = MediaTime.seconds(1_000)
    let publisher: ClientPeer
    let publisherCall: CallID
    private var peers: [ClientPeer] = []
    /// Each peer's call: what the media port's router finds for its address (or its ufrag).
    private var calls: [TransportAddress: CallID] = [:]
    private var sequences: [UInt16] = [1_000, 2_000, 3_000]
    private var timestamp: UInt32 = 90_000
    private var pictureID: UInt16 = 1
    private var transportSequence: UInt16 = 1
    private let layerSSRCs: [UInt32]

    public init(kind: Kind, subscribers: Int = 10) throws {
        self.kind = kind
        self.subscribers = subscribers
        let key = RoomKey(application: ApplicationKey(randomBytes: Array(repeating: 7, count: 16)),
                          room: try RoomID(validating: "bench"))
        let media = RoomCore.Media(dtls: try DTLSContext(certificate: DTLSCertificate()),
                                   candidateAddress: "10.0.0.1", candidatePort: 3478)
        core = RoomCore(key: key, settings: RoomSettings(maxParticipants: 100, mixedSpeakers: 3, videoSlots: 9),
                        media: media, wallClock: WallClock(reference: now, date: Date(timeIntervalSince1970: 1_800_000_000)),
                        logger: Logger(label: "bench-room"))
        let simulcast = kind == .simulcastTransportCC
        publisher = try ClientPeer(name: "pub", port: 40_000, fixture: simulcast ? "chrome-simulcast-qhf.sdp" : "aiortc-av-2slots.sdp",
                                   seed: 1)
        layerSSRCs = simulcast ? [publisher.videoSSRC, publisher.rtxSSRC, publisher.audioSSRC ^ 0x5A5A_5A5A]
            : [publisher.videoSSRC]
        publisherCall = Self.callID(index: 0)
        try join(publisher, index: 0)
        for index in 1...subscribers {
            let viewer = try ClientPeer(name: "sub\(index)", port: UInt16(40_000 + index),
                                        fixture: simulcast ? "chrome-av-2slots.sdp" : "aiortc-av-2slots.sdp",
                                        seed: UInt64(1 + index))
            try join(viewer, index: index)
        }
        guard peers.allSatisfy(\.isConnected) else { throw SetupError(description: "a peer did not connect") }
        // Keyframes on every layer until each viewer's first slot shows the camera.
        for _ in 0..<10 {
            for layer in layerSSRCs.indices { deliver(packet(layer: layer, keyframe: true)) }
            advance(milliseconds: 20)
        }
        let probe = packet(layer: 0, keyframe: false)
        let sent = forward(probe)
        guard sent == subscribers else {
            throw SetupError(description: "one packet reached \(sent) of \(subscribers) viewers")
        }
    }

    /// `count` protected publisher packets (delta frames of the lowest layer), in order.
    public func packets(count: Int) -> [[UInt8]] {
        (0..<count).map { _ in packet(layer: 0, keyframe: false) }
    }

    /// One publisher packet through the room; returns how many datagrams left for the viewers.
    @discardableResult
    public func forward(_ datagram: [UInt8]) -> Int {
        now = now.adding(nanoseconds: 100_000)
        core.receive(datagram, from: publisher.address, callId: publisherCall, now: now, into: &output)
        let sent = output.transmits.count
        output.removeAll()
        return sent
    }

    /// A 1,100-byte VP8 packet of `layer` (a whole frame: S and the marker), as the publisher
    /// sends it: with simulcast its RID and the transport-wide sequence number (Chromium's IDs
    /// 10 and 3), otherwise no extension (aiortc's VP8 is payload type 97, Chromium's 96).
    func packet(layer: Int, keyframe: Bool) -> [UInt8] {
        let simulcast = kind == .simulcastTransportCC
        let rids: [[UInt8]] = [[0x71], [0x68], [0x66]]  // q, h, f
        let extensions = simulcast ? [
            RTPHeaderExtensionElement(id: 10, value: .bytes(rids[layer])),
            RTPHeaderExtensionElement(id: 3, value: .transportSequenceNumber(transportSequence)),
        ] : []
        transportSequence &+= 1
        let fields = RTPHeaderFields(marker: true, payloadType: PayloadType(masking: simulcast ? 96 : 97),
                                     sequenceNumber: sequences[layer], timestamp: timestamp,
                                     ssrc: SSRC(layerSSRCs[layer]), extensions: extensions)
        sequences[layer] &+= 1
        if layer == layerSSRCs.count - 1 || !keyframe { timestamp &+= 3_000 }
        pictureID = (pictureID &+ 1) & 0x7FFF
        let height = UInt16(180 << layer)
        let width = height * 16 / 9
        var payload: [UInt8] = [0x90, 0x80, 0x80 | UInt8(pictureID >> 8), UInt8(truncatingIfNeeded: pictureID)]
        payload += keyframe
            ? [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A, UInt8(truncatingIfNeeded: width), UInt8(width >> 8),
               UInt8(truncatingIfNeeded: height), UInt8(height >> 8)]
            : [0x11, 0x02, 0x00]
        payload += [UInt8](repeating: 0x42, count: 1_100 - 12 - payload.count - (simulcast ? 8 : 0))
        return publisher.rtp(fields, payload: payload)?.datagram ?? []
    }

    // MARK: - Setup: the media port's router and the peers' handshakes, in process.

    /// The call of the peer joined `index`-th (0: the publisher).
    static func callID(index: Int) -> CallID {
        CallID(guid: ApplicationKey(randomBytes: Array(repeating: UInt8(index + 1), count: 16)).rawValue)
    }

    private func join(_ peer: ClientPeer, index: Int) throws {
        let callId = Self.callID(index: index)
        let request = JoinRequest(callId: callId, userId: try UserID(validating: peer.name), displayName: nil,
                                  offer: try peer.offer())
        let answer = try core.join(request, now: now, into: &output)
        try peer.accept(answer: answer.sdp)
        peers.append(peer)
        calls[peer.address] = callId
        carryOut()
        if let check = peer.connectivityCheck() { deliver(check.datagram, from: peer) }
        advance(milliseconds: 100)
    }

    private func deliver(_ datagram: [UInt8], from peer: ClientPeer? = nil) {
        let source = peer ?? publisher
        guard let callId = calls[source.address] else { return }
        core.receive(datagram, from: source.address, callId: callId, now: now, into: &output)
        carryOut()
    }

    private func advance(milliseconds: Int) {
        for _ in 0..<(milliseconds / 20) {
            now = now.adding(milliseconds: 20)
            core.tick(now: now, into: &output)
            carryOut()
            for peer in peers {
                for transmit in peer.poll(now: now) { deliver(transmit.datagram, from: peer) }
            }
        }
    }

    /// Each handshake datagram to a peer handed to it, its replies delivered back at once,
    /// until nothing is left in flight (the routing is `calls`, fixed at join).
    private func carryOut() {
        var queue = output.transmits
        output.removeAll()
        while !queue.isEmpty {
            let transmit = queue.removeFirst()
            guard let peer = peers.first(where: { $0.address == transmit.destination }) else { continue }
            // Media to the peers is dropped unread: only the handshake needs answers.
            guard PacketClass(transmit.datagram) == .stun || PacketClass(transmit.datagram) == .dtls else { continue }
            for reply in peer.receive(transmit.datagram, now: now) {
                guard let callId = calls[peer.address] else { continue }
                core.receive(reply.datagram, from: peer.address, callId: callId, now: now, into: &output)
                queue += output.transmits
                output.removeAll()
            }
        }
    }
}
