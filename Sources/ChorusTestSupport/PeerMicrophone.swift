import AudioMixer
import ChorusCore
import RTP

/// A test participant's microphone: a tone (or silence) Opus-encoded every 20 ms and sent as
/// RTP with the RFC 6464 level, as aiortc sends it (payload type 96, level extension 2).
public struct PeerMicrophone {
    public var tone: TestTone?
    /// 20 ms frames per packet: 1, or 2 or 3 for the 40 and 60 ms packets some clients send
    /// (`a=ptime:40`, SIP gateways); `nextPacket` then returns nil until a packet is full.
    public var framesPerPacket = 1
    let encoder: OpusEncoder
    var sequenceNumber: UInt16 = 1_000
    var timestamp: UInt32 = 50_000
    var payload = [UInt8](repeating: 0, count: 1_500)
    var captured: [Int16] = []

    public init(frequency: Double?) throws {
        tone = frequency.map { TestTone(frequency: $0, amplitude: 0.3) }
        encoder = try OpusEncoder()
    }

    /// A 20 ms frame not sent, as in an Opus DTX pause: the timestamp moves on, the sequence
    /// number does not.
    public mutating func skipFrame() {
        _ = tone?.nextFrame()
        timestamp &+= 960
    }

    /// The next 20 ms of the microphone: its packet from `peer`, protected for the server, when
    /// that completes one (every call with 20 ms packets).
    public mutating func nextPacket(from peer: ClientPeer) -> Transmit? {
        captured += tone?.nextFrame() ?? [Int16](repeating: 0, count: 960)
        guard captured.count >= 960 * framesPerPacket else { return nil }
        let pcm = captured
        captured.removeAll(keepingCapacity: true)
        let level: UInt8 = tone == nil ? 127 : 14
        let length = pcm.withUnsafeBufferPointer { samples in
            payload.withUnsafeMutableBufferPointer { (try? encoder.encode(samples, into: $0)) ?? 0 }
        }
        let fields = RTPHeaderFields(
            payloadType: PayloadType(masking: 96), sequenceNumber: sequenceNumber, timestamp: timestamp,
            ssrc: SSRC(peer.audioSSRC), extensions: [RTPHeaderExtensionElement(id: 2, value: .bytes([0x80 | level]))])
        sequenceNumber &+= 1
        timestamp &+= UInt32(pcm.count)
        return peer.rtp(fields, payload: Array(payload[0..<length]))
    }
}
