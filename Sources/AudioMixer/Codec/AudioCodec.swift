/// The audio shape every codec in the mixer works in: 48 kHz mono, 20 ms ticks. Opus always runs
/// its RTP clock at 48 kHz (RFC 7587 §4.1) whatever the audio bandwidth, so one constant covers
/// both the PCM sample rate and the RTP timestamp rate.
public enum AudioCodecFormat {
    /// Samples per second of PCM, and the RTP clock rate of Opus.
    public static let sampleRate = 48_000
    /// Samples in one 20 ms mixer tick.
    public static let frameSamples = 960
    /// Longest Opus packet (120 ms, RFC 6716 §3.2.5); a decode buffer this long accepts any packet.
    public static let maxPacketSamples = 5_760
    /// Shortest unit libopus conceals or recovers (2.5 ms); PLC and FEC lengths are multiples of it.
    public static let minimumFrameSamples = 120
    /// Room for one encoded packet: libopus's own recommendation for `max_data_bytes`.
    public static let maxPayloadBytes = 4_000
}

/// Why a codec call failed. Decoding peer payloads fails this way instead of trapping.
public enum AudioCodecError: Error, Equatable, Sendable {
    /// The codec library could not create its state (the libopus error code, or 0).
    case creationFailed(code: Int32)
    /// The payload is not a valid packet for this codec (libopus `OPUS_INVALID_PACKET` etc.).
    case invalidPayload(code: Int32)
    /// Encoding failed (the libopus error code).
    case encodeFailed(code: Int32)
    /// The input frame does not have a length the codec accepts.
    case invalidFrameLength(Int)
    /// The output buffer cannot hold the result.
    case bufferTooSmall(needed: Int)
    /// The codec has no such feature (e.g. in-band FEC on PCM).
    case unsupported
}

/// Turns one 20 ms frame of 48 kHz mono PCM into one RTP payload. The mixer holds one per
/// distinct output mix and calls it once per tick on the room's queue; implementations are
/// stateful (Opus keeps prediction state between frames) and not thread-safe.
///
/// Settings take effect from the next frame. Out-of-range values are clamped, never rejected,
/// because they come from bandwidth estimates and loss reports that may be noisy.
public protocol AudioEncoder: AnyObject, Sendable {
    /// Target bitrate in bits per second.
    var bitrate: Int { get set }
    /// Encoder effort, 0 (cheapest) … 10 (best).
    var complexity: Int { get set }
    /// Whether each packet carries a low-bitrate copy of the previous frame (Opus LBRR).
    var inbandFEC: Bool { get set }
    /// The loss rate the receivers report, 0…100; Opus spends more on FEC as it grows.
    var expectedPacketLossPercent: Int { get set }

    /// Encodes `pcm` (exactly one frame, usually 960 samples) into `payload`; returns the number
    /// of bytes written. A result of 2 bytes or less is a DTX frame that need not be sent.
    func encode(
        _ pcm: UnsafeBufferPointer<Int16>, into payload: UnsafeMutableBufferPointer<UInt8>
    ) throws(AudioCodecError) -> Int

    /// As `encode(_:into:)` for float samples in -1…1.
    func encode(
        _ pcm: UnsafeBufferPointer<Float>, into payload: UnsafeMutableBufferPointer<UInt8>
    ) throws(AudioCodecError) -> Int

    /// Forgets the inter-frame state, e.g. when the output stream restarts.
    func reset()
}

/// Turns RTP payloads of one sender back into 48 kHz mono PCM, and covers lost packets with
/// in-band FEC or concealment. One per sending participant, driven by that participant's
/// jitter buffer output once per tick on the room's queue; stateful and not thread-safe.
///
/// Every method writes at most `pcm.count` samples and returns how many it wrote. Peer payloads
/// that do not decode throw `AudioCodecError.invalidPayload`; they never trap.
public protocol AudioDecoder: AnyObject, Sendable {
    /// Whether `decodeFEC` can recover a lost frame from the packet after it.
    var supportsInbandFEC: Bool { get }

    /// The audio duration a payload carries, in samples at 48 kHz, without decoding it (Opus
    /// reads the TOC byte); nil if the payload is not valid. The jitter buffer uses it to
    /// place packets of 10–60 ms on its timeline.
    func packetSamples(_ payload: UnsafeBufferPointer<UInt8>) -> Int?

    /// Decodes one payload. Give `pcm` room for `AudioCodecFormat.maxPacketSamples` to accept
    /// any packet duration (Opus packets carry 2.5–120 ms).
    func decode(
        _ payload: UnsafeBufferPointer<UInt8>, into pcm: UnsafeMutableBufferPointer<Int16>
    ) throws(AudioCodecError) -> Int

    /// Recovers the `samples` of audio lost just before `nextPayload` from the redundant copy it
    /// carries (Opus in-band FEC). Decode `nextPayload` normally afterwards, as usual.
    func decodeFEC(
        _ nextPayload: UnsafeBufferPointer<UInt8>, samples: Int, into pcm: UnsafeMutableBufferPointer<Int16>
    ) throws(AudioCodecError) -> Int

    /// Synthesizes `samples` of audio for a packet that never came (packet loss concealment).
    func conceal(samples: Int, into pcm: UnsafeMutableBufferPointer<Int16>) throws(AudioCodecError) -> Int

    /// Forgets the inter-frame state, e.g. after a sender's SSRC changed.
    func reset()
}

extension AudioEncoder {
    /// Allocating convenience for tests and tools: encodes one frame into a new array.
    public func encode(_ pcm: [Int16]) throws(AudioCodecError) -> [UInt8] {
        // Room for any Opus packet, or for 16-bit PCM.
        var payload = [UInt8](repeating: 0, count: max(AudioCodecFormat.maxPayloadBytes, 2 * pcm.count))
        let written: Int = try pcm.withUnsafeBufferPointer { (input) throws(AudioCodecError) -> Int in
            try payload.withUnsafeMutableBufferPointer { (output) throws(AudioCodecError) -> Int in
                try encode(input, into: output)
            }
        }
        payload.removeLast(payload.count - written)
        return payload
    }

    /// Allocating convenience for tests and tools: encodes one float frame into a new array.
    public func encode(_ pcm: [Float]) throws(AudioCodecError) -> [UInt8] {
        var payload = [UInt8](repeating: 0, count: max(AudioCodecFormat.maxPayloadBytes, 2 * pcm.count))
        let written: Int = try pcm.withUnsafeBufferPointer { (input) throws(AudioCodecError) -> Int in
            try payload.withUnsafeMutableBufferPointer { (output) throws(AudioCodecError) -> Int in
                try encode(input, into: output)
            }
        }
        payload.removeLast(payload.count - written)
        return payload
    }
}

extension AudioDecoder {
    /// `packetSamples(_:)` for an array.
    public func packetSamples(_ payload: [UInt8]) -> Int? {
        payload.withUnsafeBufferPointer { packetSamples($0) }
    }

    /// Allocating convenience for tests and tools: decodes one payload into a new array.
    public func decode(_ payload: [UInt8]) throws(AudioCodecError) -> [Int16] {
        try withScratch { (pcm) throws(AudioCodecError) -> Int in
            try payload.withUnsafeBufferPointer { (input) throws(AudioCodecError) -> Int in
                try decode(input, into: pcm)
            }
        }
    }

    /// Allocating convenience: the `samples` lost before `nextPayload`, recovered from its FEC.
    public func decodeFEC(_ nextPayload: [UInt8], samples: Int) throws(AudioCodecError) -> [Int16] {
        try withScratch { (pcm) throws(AudioCodecError) -> Int in
            try nextPayload.withUnsafeBufferPointer { (input) throws(AudioCodecError) -> Int in
                try decodeFEC(input, samples: samples, into: pcm)
            }
        }
    }

    /// Allocating convenience: `samples` of concealment.
    public func conceal(samples: Int) throws(AudioCodecError) -> [Int16] {
        try withScratch { (pcm) throws(AudioCodecError) -> Int in try conceal(samples: samples, into: pcm) }
    }

    private func withScratch(
        _ body: (UnsafeMutableBufferPointer<Int16>) throws(AudioCodecError) -> Int
    ) throws(AudioCodecError) -> [Int16] {
        var pcm = [Int16](repeating: 0, count: AudioCodecFormat.maxPacketSamples)
        let written = try pcm.withUnsafeMutableBufferPointer { (buffer) throws(AudioCodecError) -> Int in
            try body(buffer)
        }
        pcm.removeLast(pcm.count - max(0, min(written, pcm.count)))
        return pcm
    }
}
