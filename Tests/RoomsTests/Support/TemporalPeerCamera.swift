import ChorusCore
import ChorusTestSupport
import RTP

/// A test participant's camera with three VP8 temporal layers, as libwebrtc sends them: frames
/// at 25 fps whose TIDs repeat 0, 2, 1, 2 (Y on the first layer 2 and layer 1 frame after each
/// base frame), two packets each, with RFC 7741 descriptors carrying a 15-bit picture ID,
/// TL0PICIDX and TID/Y. A key frame (restarting the pattern) follows each keyframe request.
/// The frame sizes make the rates known: about 100 kbit/s at TID 0, 60 at TID 1 and 100 at
/// TID 2, so 100, 160 and 260 kbit/s cumulatively.
struct TemporalPeerCamera {
    static let pattern: [(tid: UInt8, sync: Bool)] = [(0, false), (2, true), (1, true), (2, false)]
    /// Bytes of payload per packet, by TID.
    static let packetBytes = [1_000, 600, 500]

    var sequenceNumber: UInt16 = 30_000
    var timestamp: UInt32 = 10_000
    var pictureID: UInt16 = 32_700
    var tl0: UInt8 = 250
    var position = 0
    var keyframeRequestsSeen = 0

    /// The next frame's two packets from `peer`, protected for the server.
    mutating func nextFrame(from peer: ClientPeer) -> [Transmit] {
        let requests = peer.rtcpReceived.filter {
            switch $0 {
            case .pictureLossIndication, .fullIntraRequest: true
            default: false
            }
        }.count
        let keyframe = requests > keyframeRequestsSeen
        keyframeRequestsSeen = requests
        if keyframe { position = 0 }
        let (tid, sync) = Self.pattern[position % Self.pattern.count]
        if tid == 0 { tl0 &+= 1 }
        var transmits: [Transmit] = []
        for index in 0..<2 {
            // X=1, S on the first packet, PID 0; I L T present; M=1 picture ID; TL0PICIDX;
            // TID(2) Y(1) KEYIDX(5, unused); then the VP8 payload header (P clear on a key frame).
            var payload: [UInt8] = [index == 0 ? 0x90 : 0x80, 0xE0, 0x80 | UInt8(pictureID >> 8), UInt8(pictureID & 0xFF),
                                    tl0, tid << 6 | (sync || keyframe ? 0x20 : 0)]
            payload.append(keyframe && index == 0 ? 0x10 : 0x11)
            payload += [UInt8](repeating: UInt8(truncatingIfNeeded: sequenceNumber), count: Self.packetBytes[Int(tid)])
            let fields = RTPHeaderFields(marker: index == 1, payloadType: PayloadType(masking: 97),
                                         sequenceNumber: sequenceNumber, timestamp: timestamp,
                                         ssrc: SSRC(peer.videoSSRC))
            if let transmit = peer.rtp(fields, payload: payload) { transmits.append(transmit) }
            sequenceNumber &+= 1
        }
        position += 1
        timestamp &+= 3_600
        pictureID = (pictureID &+ 1) & 0x7FFF
        return transmits
    }
}
