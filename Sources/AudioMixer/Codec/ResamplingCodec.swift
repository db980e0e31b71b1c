/// A decoder at a member's own rate (8, 16 or 24 kHz: a phone's G.711 or L16) presented to the
/// room at the mixer's 48 kHz: every frame it decodes, recovers or conceals is upsampled by an
/// `IntegerResampler`, and `packetSamples` counts 48 kHz samples, as the jitter buffer expects.
/// The room scales the member's RTP timestamps by the same factor (`AudioFormat`), so the
/// jitter buffer sees one 48 kHz timeline whatever the member's clock.
///
/// `@unchecked Sendable` (as `OpusDecoder`): it holds the resampler's filter state and a
/// scratch buffer, mutated only by the one sender's jitter buffer on the room's queue.
public final class ResamplingDecoder: AudioDecoder, @unchecked Sendable {
    public let inner: any AudioDecoder
    private var resampler: IntegerResampler
    private var scratch: [Int16]

    /// nil unless `factor` is one `IntegerResampler` takes.
    public init?(_ inner: any AudioDecoder, factor: Int) {
        guard let resampler = IntegerResampler(factor: factor) else { return nil }
        self.inner = inner
        self.resampler = resampler
        scratch = [Int16](repeating: 0, count: AudioCodecFormat.maxPacketSamples)
    }

    public var supportsInbandFEC: Bool { inner.supportsInbandFEC }

    public func packetSamples(_ payload: UnsafeBufferPointer<UInt8>) -> Int? {
        inner.packetSamples(payload).map { $0 * resampler.factor }
    }

    public func decode(_ payload: UnsafeBufferPointer<UInt8>, into pcm: UnsafeMutableBufferPointer<Int16>)
        throws(AudioCodecError) -> Int
    {
        try upsampled(into: pcm) { (buffer) throws(AudioCodecError) -> Int in try inner.decode(payload, into: buffer) }
    }

    public func decodeFEC(_ nextPayload: UnsafeBufferPointer<UInt8>, samples: Int,
                          into pcm: UnsafeMutableBufferPointer<Int16>) throws(AudioCodecError) -> Int {
        let factor = resampler.factor
        return try upsampled(into: pcm) { (buffer) throws(AudioCodecError) -> Int in
            try inner.decodeFEC(nextPayload, samples: samples / factor, into: buffer)
        }
    }

    public func conceal(samples: Int, into pcm: UnsafeMutableBufferPointer<Int16>) throws(AudioCodecError) -> Int {
        let factor = resampler.factor
        return try upsampled(into: pcm) { (buffer) throws(AudioCodecError) -> Int in
            try inner.conceal(samples: samples / factor, into: buffer)
        }
    }

    public func reset() {
        inner.reset()
        resampler.reset()
    }

    /// Runs the inner codec into the scratch buffer (only as much of it as `pcm` can take once
    /// upsampled), then upsamples what it wrote into `pcm`.
    private func upsampled(into pcm: UnsafeMutableBufferPointer<Int16>,
                           _ body: (UnsafeMutableBufferPointer<Int16>) throws(AudioCodecError) -> Int)
        throws(AudioCodecError) -> Int
    {
        let room = min(scratch.count, pcm.count / resampler.factor)
        let written = try scratch.withUnsafeMutableBufferPointer { (buffer) throws(AudioCodecError) -> Int in
            try body(UnsafeMutableBufferPointer(rebasing: buffer[0..<room]))
        }
        let count = max(0, min(written, room))
        return scratch.withUnsafeBufferPointer { buffer in
            resampler.upsample(UnsafeBufferPointer(rebasing: buffer[0..<count]), into: pcm)
        }
    }
}

/// An encoder at a member's own rate fed the mixer's 48 kHz frames: each frame is downsampled
/// by an `IntegerResampler` (its low-pass keeps what the member's rate cannot carry from
/// folding back as aliases), then encoded. One per distinct mix and format, as every mix
/// encoder is.
///
/// `@unchecked Sendable` (as `OpusEncoder`): its resampler state and scratch buffer are mutated
/// only by the one mix stream's encodes on the room's queue.
public final class ResamplingEncoder: AudioEncoder, @unchecked Sendable {
    public let inner: any AudioEncoder
    private var resampler: IntegerResampler
    private var scratch: [Int16]

    public init?(_ inner: any AudioEncoder, factor: Int) {
        guard let resampler = IntegerResampler(factor: factor) else { return nil }
        self.inner = inner
        self.resampler = resampler
        scratch = [Int16](repeating: 0, count: AudioCodecFormat.maxPacketSamples)
    }

    public var bitrate: Int {
        get { inner.bitrate }
        set { inner.bitrate = newValue }
    }
    public var complexity: Int {
        get { inner.complexity }
        set { inner.complexity = newValue }
    }
    public var inbandFEC: Bool {
        get { inner.inbandFEC }
        set { inner.inbandFEC = newValue }
    }
    public var expectedPacketLossPercent: Int {
        get { inner.expectedPacketLossPercent }
        set { inner.expectedPacketLossPercent = newValue }
    }

    public func encode(_ pcm: UnsafeBufferPointer<Int16>, into payload: UnsafeMutableBufferPointer<UInt8>)
        throws(AudioCodecError) -> Int
    {
        let count = scratch.withUnsafeMutableBufferPointer { resampler.downsample(pcm, into: $0) }
        return try scratch.withUnsafeBufferPointer { (buffer) throws(AudioCodecError) -> Int in
            try inner.encode(UnsafeBufferPointer(rebasing: buffer[0..<count]), into: payload)
        }
    }

    public func encode(_ pcm: UnsafeBufferPointer<Float>, into payload: UnsafeMutableBufferPointer<UInt8>)
        throws(AudioCodecError) -> Int
    {
        var samples = pcm.map { PCMCodec.int16(from: $0) }
        return try samples.withUnsafeMutableBufferPointer { (buffer) throws(AudioCodecError) -> Int in
            try encode(UnsafeBufferPointer(buffer), into: payload)
        }
    }

    public func reset() {
        inner.reset()
        resampler.reset()
    }
}
