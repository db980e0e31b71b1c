import AudioMixer
import Testing

@Suite("AudioLevel: dBov and RFC 6464 values")
struct AudioLevelTests {
    @Test func fullScaleSquareIsZeroDBov() {
        let square = (0..<960).map { $0 % 2 == 0 ? Int16(-32768) : Int16(-32768) }
        #expect(AudioLevel.dBov(of: square) == 0)
        let floatSquare = (0..<960).map { $0 % 48 < 24 ? Float(1) : Float(-1) }
        #expect(AudioLevel.dBov(of: floatSquare) == 0)
    }

    @Test func fullScaleSineIsAboutMinusThreeDBov() {
        var tone = MixerTestTone(frequency: 1_000, amplitude: 1)
        let level = AudioLevel.dBov(of: tone.nextFrame())
        #expect(abs(level - -3.01) < 0.05)
        var quiet = MixerTestTone(frequency: 1_000, amplitude: 0.01)
        #expect(abs(AudioLevel.dBov(of: quiet.nextFloatFrame()) - -43.01) < 0.05)
    }

    @Test func silenceAndGarbageAreFloored() {
        #expect(AudioLevel.dBov(of: [Int16](repeating: 0, count: 960)) == -127)
        #expect(AudioLevel.dBov(of: [Int16]()) == -127)
        #expect(AudioLevel.dBov(of: [Float](repeating: .nan, count: 960)) == -127)
        #expect(AudioLevel.dBov(of: [Float](repeating: .infinity, count: 960)) == -127)
        #expect(AudioLevel.dBov(of: [Float](repeating: 100, count: 960)) == 0)
        #expect(AudioLevel.dBov(meanSquare: -1) == -127)
    }

    @Test(arguments: [
        (Float(0), UInt8(0)), (-0.4, 0), (-3.01, 3), (-42.6, 43), (-127, 127), (-200, 127), (5, 0), (.nan, 127),
    ])
    func rfc6464Levels(dBov: Float, level: UInt8) {
        #expect(AudioLevel.rfc6464Level(dBov: dBov) == level)
    }

    @Test func rfc6464LevelBackToDBov() {
        #expect(AudioLevel.dBov(rfc6464Level: 0) == 0)
        #expect(AudioLevel.dBov(rfc6464Level: 30) == -30)
        #expect(AudioLevel.dBov(rfc6464Level: 200) == -127)
    }

    @Test func ssrcAudioLevelByte() {
        let voiced = SSRCAudioLevel(byte: 0x80 | 25)
        #expect(voiced.level == 25 && voiced.voiceActivity == true && voiced.dBov == -25)
        #expect(SSRCAudioLevel(byte: 25).voiceActivity == false)
        #expect(SSRCAudioLevel(byte: 0x80 | 25, voiceActivityNegotiated: false).voiceActivity == nil)
        #expect(SSRCAudioLevel(level: 250, voiceActivity: nil).level == 127)
    }
}
