import AudioMixer
import ChorusCore
import ChorusTestSupport
import RTP

/// A test participant's microphone: a tone (or silence) Opus-encoded every 20 ms and sent as
/// RTP with the RFC 6464 level, as aiortc sends it (payload type 96, level extension 2).
struct PeerMicrophone {
    var tone: TestTone?
    let encoder: OpusEncoder
    var sequenceNumber: UInt16 = 1_000
    var timestamp: UInt32 = 50_000
    var payload = [UInt8](repeating: 0, count: 1_500)

    init(frequency: Double?) throws {
        tone = frequency.map { TestTone(frequency: $0, amplitude: 0.3) }
        encoder = try OpusEncoder()
    }

    /// The next 20 ms packet from `peer`, protected for the server.
    mutating func nextPacket(from peer: ClientPeer) -> Transmit? {
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

/// What a test participant hears: its mix stream decoded in sequence order.
enum PeerEar {
    /// The decoded mix `peer` received (its server stream on mid 0), in sequence order.
    static func heard(by peer: ClientPeer) throws -> [Int16] {
        guard let ssrc = peer.answerSSRCs["0"], let packets = peer.received[ssrc] else { return [] }
        var unwrapper = SequenceNumberUnwrapper()
        let ordered = packets.map { (unwrapper.unwrap($0.header.sequenceNumber), $0) }.sorted { $0.0 < $1.0 }
        let decoder = try OpusDecoder()
        var pcm = [Int16](repeating: 0, count: 5_760)
        var heard: [Int16] = []
        for (_, packet) in ordered {
            let payload = Array(packet.payload)
            let count = payload.withUnsafeBufferPointer { input in
                pcm.withUnsafeMutableBufferPointer { (try? decoder.decode(input, into: $0)) ?? 0 }
            }
            heard += pcm[0..<count]
        }
        return heard
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
