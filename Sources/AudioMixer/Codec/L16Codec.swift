/// Linear 16-bit PCM as RTP carries it (RFC 3551 §4.5.11: two's complement, network byte
/// order) at any clock rate: the "codec" of a member that hands the room decoded frames, and
/// the simplest payload a plain-RTP endpoint sends. It works at the member's own rate; the
/// room meets the mixer's 48 kHz through `ResamplingDecoder` and `ResamplingEncoder`.
///
/// Stateless, so plainly `Sendable`. No FEC; concealment is silence. Odd-length payloads are
/// invalid and throw, never trap.
public final class L16Codec: AudioEncoder, AudioDecoder, Sendable {
    // The encoder settings mean nothing for PCM; they are accepted and ignored.
    public var bitrate: Int { get { 0 } set {} }
    public var complexity: Int { get { 0 } set {} }
    public var inbandFEC: Bool { get { false } set {} }
    public var expectedPacketLossPercent: Int { get { 0 } set {} }
    public var supportsInbandFEC: Bool { false }

    public init() {}

    public func encode(_ pcm: UnsafeBufferPointer<Int16>, into payload: UnsafeMutableBufferPointer<UInt8>)
        throws(AudioCodecError) -> Int
    {
        let needed = pcm.count * 2
        guard payload.count >= needed else { throw .bufferTooSmall(needed: needed) }
        for index in 0..<pcm.count {
            let bits = UInt16(bitPattern: pcm[index])
            payload[2 * index] = UInt8(truncatingIfNeeded: bits >> 8)
            payload[2 * index + 1] = UInt8(truncatingIfNeeded: bits)
        }
        return needed
    }

    public func encode(_ pcm: UnsafeBufferPointer<Float>, into payload: UnsafeMutableBufferPointer<UInt8>)
        throws(AudioCodecError) -> Int
    {
        var samples = pcm.map { PCMCodec.int16(from: $0) }
        return try samples.withUnsafeMutableBufferPointer { (buffer) throws(AudioCodecError) -> Int in
            try encode(UnsafeBufferPointer(buffer), into: payload)
        }
    }

    public func packetSamples(_ payload: UnsafeBufferPointer<UInt8>) -> Int? {
        payload.isEmpty || payload.count % 2 != 0 ? nil : payload.count / 2
    }

    public func decode(_ payload: UnsafeBufferPointer<UInt8>, into pcm: UnsafeMutableBufferPointer<Int16>)
        throws(AudioCodecError) -> Int
    {
        guard let samples = packetSamples(payload) else { throw .invalidPayload(code: -4) }
        guard samples <= pcm.count else { throw .bufferTooSmall(needed: samples) }
        for index in 0..<samples {
            pcm[index] = Int16(bitPattern: UInt16(payload[2 * index]) << 8 | UInt16(payload[2 * index + 1]))
        }
        return samples
    }

    public func decodeFEC(_ nextPayload: UnsafeBufferPointer<UInt8>, samples: Int,
                          into pcm: UnsafeMutableBufferPointer<Int16>) throws(AudioCodecError) -> Int {
        throw .unsupported
    }

    public func conceal(samples: Int, into pcm: UnsafeMutableBufferPointer<Int16>) throws(AudioCodecError) -> Int {
        let count = max(0, min(samples, pcm.count))
        for index in 0..<count { pcm[index] = 0 }
        return count
    }

    public func reset() {}
}
