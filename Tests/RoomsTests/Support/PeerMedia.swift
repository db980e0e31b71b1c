import AudioMixer
import ChorusCore
import ChorusTestSupport
import RTP

/// What a test participant hears: its mix stream decoded in sequence order.
enum PeerEar {
    /// The decoded mix `peer` received (its server stream on mid 0), in sequence order.
    static func heard(by peer: ClientPeer) throws -> [Int16] {
        guard let ssrc = peer.answerSSRCs["0"], let packets = peer.received[ssrc] else { return [] }
        var unwrapper = SequenceNumberUnwrapper()
        let ordered = packets.map { (unwrapper.unwrap($0.header.sequenceNumber), $0) }.sorted { $0.0 < $1.0 }
        return try frames(ordered.map(\.1)).flatMap { $0 }
    }

    /// Each packet's decoded frame, one decoder through `packets` in the order given (an
    /// undecodable packet gives an empty frame).
    static func frames(_ packets: [RTPPacket]) throws -> [[Int16]] {
        let decoder = try OpusDecoder()
        var pcm = [Int16](repeating: 0, count: 5_760)
        return packets.map { packet in
            let payload = Array(packet.payload)
            let count = payload.withUnsafeBufferPointer { input in
                pcm.withUnsafeMutableBufferPointer { (try? decoder.decode(input, into: $0)) ?? 0 }
            }
            return Array(pcm[0..<count])
        }
    }

    /// Power (dBFS) of each frequency in the last `milliseconds` of what `peer` heard.
    static func levels(heardBy peer: ClientPeer, at frequencies: [Double], lastMilliseconds: Int = 600) throws
        -> [Double]
    {
        let pcm = try heard(by: peer)
        let tail = Array(pcm.suffix(lastMilliseconds * 48))
        return frequencies.map { Spectrum.powerDB(of: tail, at: $0) }
    }
}

/// A test participant's camera: one-packet VP8 frames at 25 fps (payload type 97, as aiortc
/// offers it) with a picture ID, delta frames until the server asks for a keyframe (PLI or
/// FIR), which comes in the next frame: aiortc's behaviour, which makes slot switches wait.
struct PeerCamera {
    var sequenceNumber: UInt16 = 7_000
    var timestamp: UInt32 = 90_000
    var pictureID: UInt16 = 100
    var keyframeRequestsSeen = 0
    /// Keyframe requests to ignore first, as if they had been lost on the way.
    var requestsToLose = 0
    /// Every packet sent, by sequence number, for checking retransmissions.
    private(set) var sent: [UInt16: [UInt8]] = [:]
    private(set) var keyframesSent = 0

    mutating func nextPacket(from peer: ClientPeer) -> Transmit? {
        let requests = peer.rtcpReceived.filter {
            switch $0 {
            case .pictureLossIndication, .fullIntraRequest: true
            default: false
            }
        }.count
        var keyframe = requests > keyframeRequestsSeen
        keyframeRequestsSeen = requests
        if keyframe, requestsToLose > 0 {
            requestsToLose -= 1
            keyframe = false
        }
        if keyframe { keyframesSent += 1 }
        // X=1 S=1 PID=0; I=1; 15-bit picture ID; then the VP8 payload header (bit 0 clear on a
        // keyframe) and a body.
        var payload: [UInt8] = [0x90, 0x80, 0x80 | UInt8(pictureID >> 8 & 0x7F), UInt8(pictureID & 0xFF)]
        payload.append(keyframe ? 0x10 : 0x11)
        payload += (0..<200).map { UInt8(truncatingIfNeeded: Int(sequenceNumber) &+ $0) }
        let fields = RTPHeaderFields(marker: true, payloadType: PayloadType(masking: 97), sequenceNumber: sequenceNumber,
                                     timestamp: timestamp, ssrc: SSRC(peer.videoSSRC))
        sent[sequenceNumber] = payload
        sequenceNumber &+= 1
        timestamp &+= 3_600
        pictureID = (pictureID + 1) & 0x7FFF
        return peer.rtp(fields, payload: payload)
    }
}

extension SimulatedRoom {
    /// Runs `milliseconds`, the microphones sending every 20 ms and `cameras` every 40 ms.
    func talkAndShow(milliseconds: Int, cameras: inout [String: PeerCamera]) {
        var frame = 0
        var local = cameras
        run(milliseconds: milliseconds) { _ in
            for (name, peer) in self.peers {
                if let packet = self.microphones[name]?.nextPacket(from: peer) { self.send(packet, from: peer) }
                if frame % 2 == 0, let packet = local[name]?.nextPacket(from: peer) { self.send(packet, from: peer) }
            }
            frame += 1
        }
        cameras = local
    }
}
