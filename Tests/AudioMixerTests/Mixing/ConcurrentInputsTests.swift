import AudioMixer
import ChorusCore
import Dispatch
import Synchronization
import Testing

@Suite("RoomAudioMixer.ConcurrentInputs")
struct ConcurrentInputsTests {
    /// Two rooms of 300 with the same talkers and noise, one fed with `setInput(for:_:)` one by
    /// one, the other from two threads at once through `withConcurrentInputs`: every tick's
    /// mixes are the same, sample for sample, and each input was told the same speaker flag.
    @Test func inputsFromTwoThreadsMixAsInputsFromOne() {
        var alone = RoomAudioMixer<Int>(), shared = RoomAudioMixer<Int>()
        let count = 300
        let handles = (0..<count).map { alone.addParticipant($0, ssrc: SSRC(UInt32($0 + 1))) }
        let sharedHandles = (0..<count).map { shared.addParticipant($0, ssrc: SSRC(UInt32($0 + 1))) }
        var tones = (0..<3).map { MixerTestTone(frequency: 300 + 150 * Double($0), amplitude: 0.2) }
        var noise = MixerTestNoise(seed: 3, rmsDBov: -60)
        let noiseFrames = (0..<8).map { _ in noise.nextFrame() }
        for tick in 0..<40 {
            let frames = (0..<count).map { $0 < 3 ? tones[$0].nextFrame() : noiseFrames[($0 + tick) % noiseFrames.count] }
            var flags = [Bool](repeating: false, count: count)
            for id in 0..<count {
                alone.setInput(for: handles[id]) { wasSpeaker in
                    flags[id] = wasSpeaker
                    return AudioMixerInput(frame: .int16(frames[id]))
                }
            }
            let sharedFlags = Mutex([Bool](repeating: false, count: count))
            let refused = Mutex(0)
            shared.withConcurrentInputs { inputs in
                DispatchQueue.concurrentPerform(iterations: 2) { lane in
                    for id in stride(from: lane, to: count, by: 2) {
                        let stored = inputs.setInput(for: sharedHandles[id]) { wasSpeaker in
                            sharedFlags.withLock { $0[id] = wasSpeaker }
                            return AudioMixerInput(frame: .int16(frames[id]))
                        }
                        if !stored { refused.withLock { $0 += 1 } }
                    }
                }
            }
            #expect(refused.withLock { $0 } == 0)
            #expect(sharedFlags.withLock { $0 } == flags, "tick \(tick): other speaker flags")
            if tick > 3 { #expect(flags[0..<3] == [true, true, true]) }
            let expected = alone.tick(now: .tick(tick)), actual = shared.tick(now: .tick(tick))
            #expect(actual.mixes.map(\.samples) == expected.mixes.map(\.samples), "tick \(tick): other mixes")
            #expect(actual.mixes.map(\.recipients) == expected.mixes.map(\.recipients))
        }
    }

    /// A handle of a participant that left is refused, even once its slot is reused, and the
    /// input is not made.
    @Test func staleHandleIsRefused() {
        var mixer = RoomAudioMixer<String>()
        let gone = mixer.addParticipant("A", ssrc: SSRC(1))
        mixer.removeParticipant("A")
        let reused = mixer.addParticipant("B", ssrc: SSRC(2))
        #expect(reused.slot == gone.slot)
        var made = 0
        let results = mixer.withConcurrentInputs { inputs in
            [inputs.setInput(for: gone) { _ in made += 1; return AudioMixerInput() },
             inputs.setInput(for: reused) { _ in made += 1; return AudioMixerInput() }]
        }
        #expect(results == [false, true])
        #expect(made == 1)
    }
}
