import AudioMixer
import ChorusCore
import RTP

/// A test participant's microphone: a tone (or silence) Opus-encoded every 20 ms and sent as
/// RTP with the RFC 6464 level, as aiortc sends it (payload type 96, level extension 2).
public struct PeerMicrophone {
    public var tone: TestTone?
    let encoder: OpusEncoder
    var sequenceNumber: UInt16 = 1_000
    var timestamp: UInt32 = 50_000
    var payload = [UInt8](repeating: 0, count: 1_500)

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

    /// The next 20 ms packet from `peer`, protected for the server.
    public mutating func nextPacket(from peer: ClientPeer) -> Transmit? {
        let pcm = tone?.nextFrame() ?? [Int16](repeating: 0, count: 960)
        let level: UInt8 = tone == nil ? 127 : 14
        let length = pcm.withUnsafeBufferPointer { samples in
            payload.withUnsafeMutableBufferPointer { (try? encoder.encode(samples, into: $0)) ?? 0 }
        }
        let fields = RTPHeaderFields(
            payloadType: PayloadType(masking: 96), sequenceNumber: sequenceNumber, timestamp: timestamp,
            ssrc: SSRC(peer.audioSSRC), extensions: [RTPHeaderExtensionElement(id: 2, value: .bytes([0x80 | level]))])
        sequenceNumber &+= 1
        timestamp &+= 960
        return peer.rtp(fields, payload: Array(payload[0..<length]))
    }
}
