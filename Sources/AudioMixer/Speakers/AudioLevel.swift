/// Audio level arithmetic in the units RFC 6464 and RFC 6465 use: dBov, decibels relative to
/// the overload point of the system, where 0 dBov is a full-scale square wave (RMS = full
/// scale) and a full-scale sine is about -3 dBov. The mixer compares levels in dBov as `Float`
/// (0 … -127); the wire carries -dBov as an integer 0…127 (`rfc6464Level`).
///
/// Samples are 16-bit PCM (full scale 32768) or `Float` normalised to full scale 1.0. The
/// measuring functions are pure and allocation-free; they run once per participant per tick on
/// decoded audio when the client sends no ssrc-audio-level extension (server-side levels).
public enum AudioLevel {
    /// The quietest level the RFC 6464 field can express; digital silence maps here.
    public static let silenceDBov: Float = -127

    /// Full scale of 16-bit PCM: `Int16` samples are divided by this to normalise to 1.0.
    public static let int16FullScale: Float = 32768

    /// dBov of a signal whose mean square (normalised to full scale 1.0) is `meanSquare`,
    /// clamped to -127…0. NaN and non-positive inputs are silence.
    public static func dBov(meanSquare: Float) -> Float {
        guard meanSquare > 0 else { return silenceDBov }  // also false for NaN
        let level = 10 * MixerMath.log10(meanSquare)
        return min(0, max(silenceDBov, level))
    }

    /// RMS level of 16-bit PCM samples in dBov; an empty frame is silence.
    public static func dBov(of samples: UnsafeBufferPointer<Int16>) -> Float {
        guard !samples.isEmpty else { return silenceDBov }
        // Integer accumulation is exact and vectorises (pmaddwd); 960 × 2^30 fits in Int64.
        var sum: Int64 = 0
        for sample in samples {
            let value = Int32(sample)
            sum &+= Int64(value &* value)
        }
        let meanSquare = Double(sum) / (Double(samples.count) * Double(int16FullScale) * Double(int16FullScale))
        return dBov(meanSquare: Float(meanSquare))
    }

    /// RMS level of normalised `Float` samples in dBov (at most 0). Non-finite samples count as
    /// 0, so decoder garbage cannot make the level inf or NaN.
    public static func dBov(of samples: UnsafeBufferPointer<Float>) -> Float {
        guard !samples.isEmpty, let base = samples.baseAddress else { return silenceDBov }
        // Eight lanes of partial sums vectorise (unaligned loads: an array's storage is only
        // 16-byte aligned); a non-finite total means garbage samples, and only then does the
        // sanitising scalar loop run.
        var lanes = SIMD8<Float>()
        let blocks = samples.count / 8
        let raw = UnsafeRawPointer(base)
        for block in 0..<blocks {
            let vector = raw.loadUnaligned(fromByteOffset: block * 32, as: SIMD8<Float>.self)
            lanes += vector * vector
        }
        var sum = lanes.sum()
        for index in (blocks * 8)..<samples.count { sum += base[index] * base[index] }
        if !sum.isFinite {
            sum = 0
            for sample in samples {
                let value = sample.isFinite ? min(8, max(-8, sample)) : 0
                sum += value * value
            }
        }
        return dBov(meanSquare: sum / Float(samples.count))
    }

    /// The largest sample magnitude (0…32,768): a cheaper test than a level when only "is
    /// there anything at all" matters.
    public static func peak(of samples: UnsafeBufferPointer<Int16>) -> Int {
        var peak: UInt16 = 0
        for sample in samples { peak = max(peak, sample.magnitude) }
        return Int(peak)
    }

    /// Convenience over an array of 16-bit samples.
    public static func dBov(of samples: [Int16]) -> Float {
        samples.withUnsafeBufferPointer { dBov(of: $0) }
    }

    /// Convenience over an array of normalised samples.
    public static func dBov(of samples: [Float]) -> Float {
        samples.withUnsafeBufferPointer { dBov(of: $0) }
    }

    /// The RFC 6464 / RFC 6465 wire value for `dBov`: -dBov rounded, 0 (loudest) … 127
    /// (silence). Positive levels clamp to 0; NaN is silence.
    public static func rfc6464Level(dBov: Float) -> UInt8 {
        guard !dBov.isNaN else { return 127 }
        let negated = (-dBov).rounded()
        return UInt8(min(127, max(0, negated)))
    }

    /// dBov of an RFC 6464 / RFC 6465 wire value; values above 127 read as 127 (silence).
    public static func dBov(rfc6464Level level: UInt8) -> Float {
        -Float(min(level, 127))
    }
}

/// The client-to-mixer audio level of RFC 6464 (`urn:ietf:params:rtp-hdrext:ssrc-audio-level`)
/// as the mixer consumes it: the level of the packet's audio in -dBov (0…127) and the V bit.
///
/// `voiceActivity` is nil when the V bit carries no information: the extension was negotiated
/// with `vad=off`. The mixer does not use V at all: clients disagree on it (aiortc sends V=0
/// on every packet, Chrome's follows its DTX setting), so it runs its own energy detector on
/// the level (see `VoiceActivityDetector`). The room fills this from the parsed extension.
public struct SSRCAudioLevel: Sendable, Hashable {
    /// -dBov, 0 (loudest) … 127 (silence).
    public let level: UInt8
    /// The sender's voice-activity flag, or nil when the flag is not meaningful (`vad=off`).
    public let voiceActivity: Bool?

    /// `level` above 127 is clamped to 127 (silence), the field's floor.
    public init(level: UInt8, voiceActivity: Bool?) {
        self.level = min(level, 127)
        self.voiceActivity = voiceActivity
    }

    /// Reads the one-byte element `|V|level(7)|`. Pass `voiceActivityNegotiated: false` when the
    /// SDP said `vad=off`, so the V bit is ignored.
    public init(byte: UInt8, voiceActivityNegotiated: Bool = true) {
        self.init(level: byte & 0x7F, voiceActivity: voiceActivityNegotiated ? byte & 0x80 != 0 : nil)
    }

    /// The level in dBov (0 … -127).
    public var dBov: Float { AudioLevel.dBov(rfc6464Level: level) }
}
