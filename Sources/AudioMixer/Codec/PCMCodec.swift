import Synchronization

/// A codec that is no codec: samples travel as 16-bit little-endian PCM. It lets the mixer core,
/// the jitter buffer and room tests run bit-exactly without libopus — what goes in comes out.
///
/// One instance serves as both encoder and decoder (use two for a sender and a receiver). It has
/// no FEC (`supportsInbandFEC` is false, `decodeFEC` throws `.unsupported`), and its
/// concealment is silence, so tests can see exactly where a frame was concealed. The encoder
/// settings are stored and ignored; they are atomics, and the coding keeps no state, so the
/// class is plainly `Sendable` (checked by the compiler), unlike the Opus classes.
public final class PCMCodec: AudioEncoder, AudioDecoder, Sendable {
    public var bitrate: Int {
        get { bitrateSetting.load(ordering: .relaxed) }
        set { bitrateSetting.store(newValue, ordering: .relaxed) }
    }
    public var complexity: Int {
        get { complexitySetting.load(ordering: .relaxed) }
        set { complexitySetting.store(newValue, ordering: .relaxed) }
    }
    public var inbandFEC: Bool {
        get { inbandFECSetting.load(ordering: .relaxed) }
        set { inbandFECSetting.store(newValue, ordering: .relaxed) }
    }
    public var expectedPacketLossPercent: Int {
        get { lossSetting.load(ordering: .relaxed) }
        set { lossSetting.store(newValue, ordering: .relaxed) }
    }
    private let bitrateSetting = Atomic<Int>(768_000)
    private let complexitySetting = Atomic<Int>(0)
    private let inbandFECSetting = Atomic<Bool>(false)
    private let lossSetting = Atomic<Int>(0)

    public var supportsInbandFEC: Bool { false }

    public init() {}

    // MARK: Encoding

    public func encode(
        _ pcm: UnsafeBufferPointer<Int16>, into payload: UnsafeMutableBufferPointer<UInt8>
    ) throws(AudioCodecError) -> Int {
        let needed = pcm.count * 2
        guard payload.count >= needed else { throw .bufferTooSmall(needed: needed) }
        for index in 0..<pcm.count {
            let bits = UInt16(bitPattern: pcm[index])
            payload[2 * index] = UInt8(truncatingIfNeeded: bits)
            payload[2 * index + 1] = UInt8(truncatingIfNeeded: bits >> 8)
        }
        return needed
    }

    public func encode(
        _ pcm: UnsafeBufferPointer<Float>, into payload: UnsafeMutableBufferPointer<UInt8>
    ) throws(AudioCodecError) -> Int {
        let needed = pcm.count * 2
        guard payload.count >= needed else { throw .bufferTooSmall(needed: needed) }
        for index in 0..<pcm.count {
            let bits = UInt16(bitPattern: Self.int16(from: pcm[index]))
            payload[2 * index] = UInt8(truncatingIfNeeded: bits)
            payload[2 * index + 1] = UInt8(truncatingIfNeeded: bits >> 8)
        }
        return needed
    }

    // MARK: Decoding

    public func decode(
        _ payload: UnsafeBufferPointer<UInt8>, into pcm: UnsafeMutableBufferPointer<Int16>
    ) throws(AudioCodecError) -> Int {
        // Odd or empty payloads are not PCM frames; -4 mirrors OPUS_INVALID_PACKET.
        guard !payload.isEmpty, payload.count % 2 == 0 else { throw .invalidPayload(code: -4) }
        let samples = payload.count / 2
        guard samples <= pcm.count else { throw .bufferTooSmall(needed: samples) }
        for index in 0..<samples {
            let bits = UInt16(payload[2 * index]) | UInt16(payload[2 * index + 1]) << 8
            pcm[index] = Int16(bitPattern: bits)
        }
        return samples
    }

    public func packetSamples(_ payload: UnsafeBufferPointer<UInt8>) -> Int? {
        payload.isEmpty || payload.count % 2 != 0 ? nil : payload.count / 2
    }

    public func decodeFEC(
        _ nextPayload: UnsafeBufferPointer<UInt8>, samples: Int, into pcm: UnsafeMutableBufferPointer<Int16>
    ) throws(AudioCodecError) -> Int {
        throw .unsupported
    }

    public func conceal(samples: Int, into pcm: UnsafeMutableBufferPointer<Int16>) throws(AudioCodecError) -> Int {
        let count = max(0, min(samples, AudioCodecFormat.maxPacketSamples))
        guard count <= pcm.count else { throw .bufferTooSmall(needed: count) }
        guard let base = pcm.baseAddress else { return 0 }
        base.update(repeating: 0, count: count)
        return count
    }

    public func reset() {}

    /// Float → Int16 with rounding and saturation (NaN becomes 0).
    static func int16(from sample: Float) -> Int16 {
        guard sample.isFinite else { return 0 }
        let scaled = (sample * 32_768).rounded()
        return Int16(max(-32_768, min(32_767, scaled)))
    }
}
