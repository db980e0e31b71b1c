/// The mix's soft limiter: turns a `Float` sum (full scale 1.0, possibly well above it when
/// several loud speakers add up) into 16-bit PCM without hard clipping and without wrapping.
///
/// Two stages, no look-ahead (a look-ahead would add its length to every listener's latency):
/// 1. A gain limiter. A peak envelope follows |x| with a fast attack (a fraction of the
///    distance per sample, not instantly: an instant attack pins the output to the threshold
///    while the envelope rises, which is a flat top) and an exponential release; the gain is
///    `threshold / envelope` above the threshold and exactly 1 below it.
/// 2. A tanh soft clip for what the envelope has not caught yet (the first samples of an
///    onset): identity up to the knee (= the threshold), then a curve with slope 1 at the knee
///    that approaches `ceiling` without reaching it. Output magnitude stays below `ceiling`
///    (-0.18 dBFS by default), so `Int16` never saturates or wraps and no ±32767 plateau exists.
///
/// Below the threshold the limiter is bit-exact: the gain is 1 and the knee is not reached, so
/// a single quiet source passes unchanged. It keeps its envelope between calls: drive it with
/// consecutive frames of one output stream (the mixer keeps one per distinct mix). Non-finite
/// input samples are treated as silence.
public struct SoftLimiter: Sendable, Equatable {
    /// Tuning. Levels are linear, relative to full scale 1.0.
    public struct Configuration: Sendable, Equatable {
        /// Where gain reduction and the soft clip's knee start (0.708 = -3 dBFS).
        public var threshold: Float
        /// The asymptote of the soft clip, above the threshold and at most 1.
        public var ceiling: Float
        /// Fraction of the distance the envelope rises toward a louder sample, per sample.
        public var attackPerSample: Float
        /// Release time constant in milliseconds.
        public var releaseMilliseconds: Float
        public var sampleRate: Float

        public init(
            threshold: Float = 0.708, ceiling: Float = 0.98, attackPerSample: Float = 0.5,
            releaseMilliseconds: Float = 150, sampleRate: Float = 48_000
        ) {
            let safeThreshold = threshold.isFinite ? min(0.99, max(0.01, threshold)) : 0.708
            self.threshold = safeThreshold
            self.ceiling = ceiling.isFinite ? min(1, max(safeThreshold + 0.001, ceiling)) : 0.98
            self.attackPerSample = attackPerSample.isFinite ? min(1, max(0.001, attackPerSample)) : 0.5
            self.releaseMilliseconds = releaseMilliseconds.isFinite ? max(0.1, releaseMilliseconds) : 150
            self.sampleRate = sampleRate.isFinite ? max(1000, sampleRate) : 48_000
        }

        /// The same values through the clamps of `init` (the fields are settable after it).
        var sanitized: Self {
            Self(
                threshold: threshold, ceiling: ceiling, attackPerSample: attackPerSample,
                releaseMilliseconds: releaseMilliseconds, sampleRate: sampleRate)
        }
    }

    public let configuration: Configuration
    /// The peak envelope (linear); above the threshold it sets the gain.
    public private(set) var envelope: Float = 0
    private let releasePerSample: Float

    public init(configuration: Configuration = Configuration()) {
        let configuration = configuration.sanitized
        self.configuration = configuration
        releasePerSample = MixerMath.exp(-1000 / (configuration.releaseMilliseconds * configuration.sampleRate))
    }

    /// The gain the envelope currently applies: 1 until it exceeds the threshold.
    public var gain: Float {
        envelope > configuration.threshold ? configuration.threshold / envelope : 1
    }

    /// Limits `input` and writes it as 16-bit PCM (full scale 32768) to `output`; processes
    /// `min(input.count, output.count)` samples.
    public mutating func process(_ input: UnsafeBufferPointer<Float>, into output: UnsafeMutableBufferPointer<Int16>) {
        let count = min(input.count, output.count)
        guard count > 0, let source = input.baseAddress, let target = output.baseAddress else { return }
        if bypassIfQuiet(source, count) {
            for index in 0..<count { target[index] = Self.pcm(source[index]) }
            return
        }
        var state = Envelope(value: envelope, release: releasePerSample, configuration: configuration)
        for index in 0..<count { target[index] = Self.pcm(state.limit(source[index])) }
        envelope = state.value
    }

    /// Limits `samples` in place (`Float` in, `Float` out: for tests and float pipelines).
    public mutating func process(_ samples: UnsafeMutableBufferPointer<Float>) {
        guard let base = samples.baseAddress, !samples.isEmpty else { return }
        if bypassIfQuiet(UnsafePointer(base), samples.count) { return }
        var state = Envelope(value: envelope, release: releasePerSample, configuration: configuration)
        for index in 0..<samples.count { base[index] = state.limit(base[index]) }
        envelope = state.value
    }

    /// Fast path: when every sample is within the threshold and so is the envelope, the gain
    /// is 1 and the knee is not reached, so the output is the input. The envelope is then set
    /// to `max(decayed envelope, block peak)`: both stay below the threshold, where its exact
    /// value does not change the output. Returns false (slow path) on any louder or NaN sample.
    private mutating func bypassIfQuiet(_ source: UnsafePointer<Float>, _ count: Int) -> Bool {
        let threshold = configuration.threshold
        guard envelope <= threshold else { return false }
        // The peak is found on the bit patterns of |x|: for non-negative floats they order like
        // the values, an integer max vectorises where a float one does not, and NaN's patterns
        // are above every finite value's, so NaN takes the slow path, which zeroes it.
        var peakBits: Int32 = 0
        for index in 0..<count {
            let bits = Int32(bitPattern: source[index].bitPattern & 0x7FFF_FFFF)
            peakBits = bits > peakBits ? bits : peakBits
        }
        let peak = Float(bitPattern: UInt32(bitPattern: peakBits))
        guard peak <= threshold else { return false }
        let decayed = envelope * MixerMath.pow(releasePerSample, Float(count))
        envelope = max(decayed, peak)
        return true
    }

    /// Float (full scale 1.0) to Int16 (full scale 32768), rounded to nearest, clamped to ±32767;
    /// NaN is 0. Branch-free so the loops around it vectorise: adding 1.5·2^23 to a float of
    /// magnitude below 2^22 leaves the rounded integer in the low mantissa bits.
    @inline(__always)
    static func pcm(_ sample: Float) -> Int16 {
        let scaled = sample * AudioLevel.int16FullScale
        let clamped = scaled.isNaN ? 0 : min(32767, max(-32767, scaled))
        let shifted = clamped + 12_582_912  // 1.5 · 2^23
        return Int16(truncatingIfNeeded: Int32(bitPattern: shifted.bitPattern) &- 0x4B40_0000)
    }
}

/// The per-sample envelope and gain computation, held in locals for the inner loop.
private struct Envelope {
    var value: Float
    let release: Float
    let attack: Float
    let threshold: Float
    let ceiling: Float

    init(value: Float, release: Float, configuration: SoftLimiter.Configuration) {
        self.value = value.isFinite ? value : 0
        self.release = release
        attack = configuration.attackPerSample
        threshold = configuration.threshold
        ceiling = configuration.ceiling
    }

    @inline(__always)
    mutating func limit(_ input: Float) -> Float {
        // Anything non-finite or absurd (decoder garbage) is silence, so the envelope stays finite.
        let x = abs(input) < 1e6 ? input : 0
        let magnitude = abs(x)
        if magnitude > value {
            value += attack * (magnitude - value)
        } else {
            value = max(magnitude, value * release)
        }
        let gain = value > threshold ? threshold / value : 1
        return softClip(x * gain)
    }

    /// Identity up to the knee (= threshold), then `knee + span·tanh((|y| − knee) / span)` with
    /// `span = ceiling − knee`: slope 1 at the knee, never reaching the ceiling.
    @inline(__always)
    func softClip(_ y: Float) -> Float {
        let magnitude = abs(y)
        guard magnitude > threshold else { return y }
        let span = ceiling - threshold
        let shaped = threshold + span * MixerMath.tanh((magnitude - threshold) / span)
        return y < 0 ? -shaped : shaped
    }
}
