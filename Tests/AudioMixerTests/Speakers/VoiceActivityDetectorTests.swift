import AudioMixer
import Testing

@Suite("VoiceActivityDetector: tone or speech versus silence and comfort noise")
struct VoiceActivityDetectorTests {
    /// Decisions for `frames` frames of `make()`, fed through `detector`.
    private func decisions(_ detector: inout VoiceActivityDetector, _ frames: Int, _ make: () -> [Int16]) -> [Bool] {
        (0..<frames).map { _ in detector.update(levelDBov: AudioLevel.dBov(of: make())) }
    }

    @Test func toneIsVoiceFromTheFirstFrameAndStaysSo() {
        var detector = VoiceActivityDetector()
        var tone = MixerTestTone(frequency: 440, amplitude: 0.3)
        // 30 s of a steady tone: the capped noise floor never learns it as noise.
        #expect(decisions(&detector, 1_500) { tone.nextFrame() }.allSatisfy { $0 })
    }

    @Test(arguments: [-65.0, -55.0])
    func comfortNoiseIsNotVoice(rmsDBov: Double) {
        var detector = VoiceActivityDetector()
        var noise = MixerTestNoise(seed: 7, rmsDBov: rmsDBov)
        #expect(decisions(&detector, 200) { noise.nextFrame() }.allSatisfy { !$0 })
    }

    @Test func digitalSilenceIsNotVoice() {
        var detector = VoiceActivityDetector()
        #expect(decisions(&detector, 50) { [Int16](repeating: 0, count: 960) }.allSatisfy { !$0 })
    }

    @Test func speechOverNoiseWithHangover() {
        var detector = VoiceActivityDetector()
        var noise = MixerTestNoise(seed: 3, rmsDBov: -60)
        var tone = MixerTestTone(frequency: 300, amplitude: 0.1)  // about -23 dBov
        #expect(decisions(&detector, 100) { noise.nextFrame() }.allSatisfy { !$0 })
        let talking = decisions(&detector, 10) { zip(tone.nextFrame(), noise.nextFrame()).map { $0 &+ $1 } }
        #expect(talking.allSatisfy { $0 })
        // The hangover (5 frames) bridges a short pause, then the decision falls.
        let after = decisions(&detector, 10) { noise.nextFrame() }
        #expect(after == Array(repeating: true, count: 5) + Array(repeating: false, count: 5))
    }

    @Test func quietSpeechInAQuietRoom() {
        var detector = VoiceActivityDetector()
        var noise = MixerTestNoise(seed: 5, rmsDBov: -75)
        _ = decisions(&detector, 50) { noise.nextFrame() }
        let active = detector.update(levelDBov: -45)
        #expect(active)
    }

    @Test func garbageLevelsDoNotTrap() {
        var detector = VoiceActivityDetector()
        let decisions = [
            detector.update(levelDBov: .nan),  // silence
            detector.update(levelDBov: .infinity),  // clamped to 0 dBov: loud
            detector.update(levelDBov: -.infinity),  // silence, within the hangover
        ]
        #expect(decisions == [false, true, true])
        detector.reset()
        #expect(detector.noiseFloorDBov == nil && !detector.isActive)
    }
}
