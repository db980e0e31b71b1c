import AudioMixer
import ChorusTestSupport
import Testing

/// The codecs a member at another rate than the mixer's goes through: L16 as RTP carries it,
/// the integer resampler between its rate and 48 kHz, and the resampling codec wrappers. Tones
/// are measured (Goertzel) after each step: what must pass keeps its level, what must not (the
/// images of upsampling, the aliases of downsampling) is far below it.
@Suite("L16 and resampling between a member's rate and 48 kHz")
struct ResamplingCodecTests {
    /// RFC 3551 §4.5.11: two's complement, most significant byte first.
    @Test func l16IsBigEndianTwosComplement() throws {
        let codec = L16Codec()
        #expect(try codec.encode([1, -2, 0x1234] as [Int16]) == [0x00, 0x01, 0xFF, 0xFE, 0x12, 0x34])
        #expect(try codec.decode([0x80, 0x00, 0x7F, 0xFF]) == [Int16.min, Int16.max])
        #expect(throws: AudioCodecError.self) { try codec.decode([0x01, 0x02, 0x03]) }
        #expect(throws: AudioCodecError.self) { try codec.decode([]) }
    }

    /// A 1 kHz tone at 8 kHz upsampled to 48 kHz keeps its level; its images around 7 and
    /// 9 kHz (what repeating samples would leave ~12 dB down) are more than 60 dB down.
    @Test func upsamplingKeepsTheToneAndRemovesItsImages() {
        var tone = TestTone(frequency: 1_000, amplitude: 0.5, sampleRate: 8_000)
        var resampler = IntegerResampler(factor: 6)!
        var output: [Int16] = []
        for _ in 0..<25 {
            let frame = tone.nextFrame(samples: 160)
            var out = [Int16](repeating: 0, count: 960)
            let written = frame.withUnsafeBufferPointer { input in
                out.withUnsafeMutableBufferPointer { resampler.upsample(input, into: $0) }
            }
            #expect(written == 960)
            output += out
        }
        let tail = Array(output.suffix(9_600))
        let level = Spectrum.powerDB(of: tail, at: 1_000)
        #expect(abs(level - Spectrum.powerDB(of: TestTone(frequency: 1_000, amplitude: 0.5).frame(9_600), at: 1_000)) < 1)
        for image in [7_000.0, 9_000, 15_000, 17_000] {
            #expect(Spectrum.powerDB(of: tail, at: image) < level - 60, "image at \(image) Hz")
        }
    }

    /// 48 kHz down to 8 kHz: a 1 kHz tone keeps its level; a 5 kHz tone, above the 4 kHz the
    /// lower rate can carry, does not fold back to 3 kHz.
    @Test func downsamplingKeepsWhatFitsAndDoesNotAlias() {
        var resampler = IntegerResampler(factor: 6)!
        var low = TestTone(frequency: 1_000, amplitude: 0.4), high = TestTone(frequency: 5_000, amplitude: 0.4)
        var output: [Int16] = []
        for _ in 0..<25 {
            let mixed = zip(low.nextFrame(), high.nextFrame()).map { Int16(clamping: Int($0) + Int($1)) }
            var out = [Int16](repeating: 0, count: 160)
            let written = mixed.withUnsafeBufferPointer { input in
                out.withUnsafeMutableBufferPointer { resampler.downsample(input, into: $0) }
            }
            #expect(written == 160)
            output += out
        }
        let tail = Array(output.suffix(1_600))
        let kept = Spectrum.powerDB(of: tail, at: 1_000, sampleRate: 8_000)
        let reference = Spectrum.powerDB(of: TestTone(frequency: 1_000, amplitude: 0.4, sampleRate: 8_000).frame(1_600),
                                         at: 1_000, sampleRate: 8_000)
        #expect(abs(kept - reference) < 1)
        #expect(Spectrum.powerDB(of: tail, at: 3_000, sampleRate: 8_000) < kept - 50, "the 5 kHz tone aliased to 3 kHz")
    }

    /// The wrappers as the room uses them: a resampling decoder's frames are 48 kHz (six times
    /// the L16 samples, which `packetSamples` says before decoding), and a resampling encoder
    /// turns a 48 kHz frame into one 20 ms L16 packet at 8 kHz.
    @Test func theWrappersSpeakTheMixersRate() throws {
        let format = try #require(AudioFormat.l16(clockRate: 8_000, payloadType: 96))
        #expect(format.timestampScale == 6)
        let decoder = try format.makeDecoder()
        let payload = try L16Codec().encode(TestTone(frequency: 500, amplitude: 0.3, sampleRate: 8_000).frame(160))
        #expect(decoder.packetSamples(payload) == 960)
        #expect(try decoder.decode(payload).count == 960)
        let encoder = try #require(format.makePlainEncoder())
        #expect(try encoder.encode(TestTone(frequency: 500, amplitude: 0.3).frame(960)).count == 320)
        #expect(AudioFormat.l16(clockRate: 44_100, payloadType: 96) == nil)
        #expect(AudioFormat.l16(clockRate: 2_000, payloadType: 96) == nil)
        #expect(AudioFormat.opus(payloadType: 111).timestampScale == 1)
    }
}

extension TestTone {
    /// The next `count` samples, from a copy (the tone itself is not advanced).
    func frame(_ count: Int) -> [Int16] {
        var copy = self
        return copy.nextFrame(samples: count)
    }
}
