import ChorusCore
import ChorusTestSupport
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

    public let kind: Kind
    public let subscribers: Int
    let room: ConnectedRoom
    let publisher: ClientPeer
    let publisherCall = ConnectedRoom.callID(index: 0)
    private var sequences: [UInt16] = [1_000, 2_000, 3_000]
    private var timestamp: UInt32 = 90_000
    private var pictureID: UInt16 = 1
    private var transportSequence: UInt16 = 1
    private let layerSSRCs: [UInt32]

    public init(kind: Kind, subscribers: Int = 10) throws {
        self.kind = kind
        self.subscribers = subscribers
        room = try ConnectedRoom(settings: RoomSettings(maxParticipants: 100, mixedSpeakers: 3, videoSlots: 9))
        let simulcast = kind == .simulcastTransportCC
        publisher = try ClientPeer(name: "pub", port: 40_000, fixture: simulcast ? "chrome-simulcast-qhf.sdp" : "aiortc-av-2slots.sdp",
                                   seed: 1)
        layerSSRCs = simulcast ? [publisher.videoSSRC, publisher.rtxSSRC, publisher.audioSSRC ^ 0x5A5A_5A5A]
            : [publisher.videoSSRC]
        try room.join(publisher, index: 0)
        for index in 1...subscribers {
            let viewer = try ClientPeer(name: "sub\(index)", port: UInt16(40_000 + index),
                                        fixture: simulcast ? "chrome-av-2slots.sdp" : "aiortc-av-2slots.sdp",
                                        seed: UInt64(1 + index))
            try room.join(viewer, index: index)
        }
        try room.requireConnected()
        // Keyframes on every layer until each viewer's first slot shows the camera.
        for _ in 0..<10 {
            for layer in layerSSRCs.indices { room.deliver(packet(layer: layer, keyframe: true), from: publisher) }
            room.advance(milliseconds: 20)
        }
        let probe = packet(layer: 0, keyframe: false)
        let sent = forwardPacket(probe)
        guard sent == subscribers else {
            throw ConnectedRoom.SetupError(description: "one packet reached \(sent) of \(subscribers) viewers")
        }
    }

    /// `count` protected publisher packets (delta frames of the lowest layer), in order.
    public func packets(count: Int) -> [[UInt8]] {
        (0..<count).map { _ in packet(layer: 0, keyframe: false) }
    }

    /// One publisher packet through the room; returns how many datagrams left for the viewers.
    /// (The measured step: `make bench-instructions` counts inside this function only, so the
    /// setup calls `forwardPacket` instead.)
    @discardableResult
    public func forward(_ datagram: [UInt8]) -> Int { forwardPacket(datagram) }

    private func forwardPacket(_ datagram: [UInt8]) -> Int {
        room.receive(datagram, from: publisher, callId: publisherCall, after: 100_000)
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
}
