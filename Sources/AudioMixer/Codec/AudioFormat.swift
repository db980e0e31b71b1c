/// The audio a room member sends or hears, as far as the room must know it: the codec, its RTP
/// clock rate and the payload type the member uses for it. The mixer itself runs on 48 kHz
/// frames of 20 ms; a format at another rate is met by a resampling decoder on the way in and a
/// resampling encoder on the way out, and its RTP timestamps are scaled onto the mixer's
/// 48 kHz timeline (`timestampScale`).
///
/// Opus's RTP clock is 48 kHz whatever the audio bandwidth it carries (RFC 7587 §4.1).
public struct AudioFormat: Hashable, Sendable {
    public enum Codec: String, Hashable, Sendable {
        case opus
        /// Linear 16-bit PCM (RFC 3551 §4.5.11).
        case l16
    }

    public let codec: Codec
    public let clockRate: Int
    public let payloadType: UInt8

    /// The shared part of a format: mixes of the same encoding are encoded once for all of its
    /// listeners, whatever payload type each negotiated.
    public struct Encoding: Hashable, Sendable {
        public let codec: Codec
        public let clockRate: Int
    }

    public static func opus(payloadType: UInt8) -> AudioFormat {
        AudioFormat(codec: .opus, clockRate: AudioCodecFormat.sampleRate, payloadType: payloadType)
    }

    /// L16 at `clockRate`; nil unless 48 kHz is a whole multiple of it, 4 kHz or more.
    public static func l16(clockRate: Int, payloadType: UInt8) -> AudioFormat? {
        guard clockRate >= 4_000, AudioCodecFormat.sampleRate % clockRate == 0, payloadType < 128 else { return nil }
        return AudioFormat(codec: .l16, clockRate: clockRate, payloadType: payloadType)
    }

    private init(codec: Codec, clockRate: Int, payloadType: UInt8) {
        self.codec = codec
        self.clockRate = clockRate
        self.payloadType = payloadType
    }

    public var encoding: Encoding { Encoding(codec: codec, clockRate: clockRate) }

    /// Mixer samples (48 kHz) per unit of this format's RTP clock.
    public var timestampScale: UInt32 { UInt32(AudioCodecFormat.sampleRate / clockRate) }

    /// A decoder whose output is the mixer's 48 kHz.
    public func makeDecoder() throws(AudioCodecError) -> any AudioDecoder {
        switch codec {
        case .opus:
            return try OpusDecoder()
        case .l16:
            let factor = Int(timestampScale)
            if factor == 1 { return L16Codec() }
            guard let decoder = ResamplingDecoder(L16Codec(), factor: factor) else { throw .unsupported }
            return decoder
        }
    }

    /// An encoder of the mixer's 48 kHz frames into this format, for codecs that take no
    /// settings (PCM); Opus mix encoders are made by the room with its encoding settings.
    public func makePlainEncoder() -> (any AudioEncoder)? {
        switch codec {
        case .opus:
            return nil
        case .l16:
            let factor = Int(timestampScale)
            return factor == 1 ? L16Codec() : ResamplingEncoder(L16Codec(), factor: factor)
        }
    }
}
