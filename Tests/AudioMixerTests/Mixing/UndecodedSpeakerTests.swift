import AudioMixer
import ChorusCore
import ChorusTestSupport
import Testing

/// A room holds a talker's packet undecoded when it can (`AudioMixerInput.undecoded`): a lone
/// talker's packet is relayed as it is, so decoding it would be wasted. The mixer must ask for
/// the samples exactly when a mix needs them, and must never mix a speaker it has no samples of.
@Suite("RoomAudioMixer with undecoded speakers")
struct UndecodedSpeakerTests {
    static let loud = SSRCAudioLevel(byte: 0x80 | 13)
    static let silent = SSRCAudioLevel(byte: 127)

    @Test func aLoneUndecodedSpeakerIsNeverDecodedAndIsTheFullMixsOnlySource() {
        var mixer = RoomAudioMixer<String>()
        let ann = mixer.addParticipant("A")
        for id in ["B", "C"] { mixer.addParticipant(id) }
        var asked: [Int] = []
        var tick: AudioMixerTick<String>?
        for index in 0..<20 {
            mixer.setInput(AudioMixerInput(audioLevel: Self.loud, undecoded: true), for: "A")
            for id in ["B", "C"] { mixer.setInput(AudioMixerInput(audioLevel: Self.silent), for: id) }
            tick = mixer.tick(now: .tick(index)) { slot in
                asked.append(slot)
                return nil
            }
        }
        #expect(asked.isEmpty, "asked for slots \(asked)")
        #expect(tick?.speakers == ["A"])
        #expect(tick?.mix(for: "B")?.contributingSources == ["A"])
        #expect(tick?.mix(for: "C")?.contributingSources == ["A"])
        #expect(tick?.mix(for: "A")?.isSilent == true)
        #expect(mixer.handle(for: "A") == ann)
        // A pause: still a speaker (hysteresis), but its own level says silence, so it
        // contributes nothing, as its decoded silence would not, and nothing is asked for.
        mixer.setInput(AudioMixerInput(audioLevel: Self.silent, undecoded: true), for: "A")
        for id in ["B", "C"] { mixer.setInput(AudioMixerInput(audioLevel: Self.silent), for: id) }
        let pause = mixer.tick(now: .tick(20)) { slot in
            asked.append(slot)
            return nil
        }
        #expect(pause.speakers == ["A"])
        #expect(pause.mixes.allSatisfy { $0.isSilent })
        #expect(asked.isEmpty)
    }

    /// Once a second speaker is audible, the undecoded speaker's samples are asked for, once
    /// per tick, and both are in the listener's mix.
    @Test func aSecondAudibleSpeakerMakesTheMixerAskForTheSamples() throws {
        var mixer = RoomAudioMixer<String>()
        let ann = mixer.addParticipant("A")
        for id in ["B", "L"] { mixer.addParticipant(id) }
        var annTone = TestTone(frequency: 500, amplitude: 0.3)
        var bobTone = TestTone(frequency: 900, amplitude: 0.3)
        var asked: [Int] = []
        var heard: [Int16] = []
        for index in 0..<50 {
            mixer.setInput(AudioMixerInput(audioLevel: Self.loud, undecoded: true), for: "A")
            let bob = index >= 10 ? bobTone.nextFrame() : nil
            mixer.setInput(AudioMixerInput(frame: bob.map { .int16($0) }, audioLevel: bob == nil ? Self.silent : Self.loud),
                           for: "B")
            mixer.setInput(AudioMixerInput(audioLevel: Self.silent), for: "L")
            let tick = mixer.tick(now: .tick(index)) { slot in
                asked.append(slot)
                return .int16(annTone.nextFrame())
            }
            if index >= 30 { heard += try #require(tick.mix(for: "L")).samples }
            if index >= 30 { #expect(Set(try #require(tick.mix(for: "L")).contributingSources) == ["A", "B"]) }
        }
        #expect(!asked.isEmpty && asked.allSatisfy { $0 == ann.slot })
        #expect(asked.count <= 40, "asked \(asked.count) times in 40 ticks with two speakers")
        let levels = [500.0, 900].map { Spectrum.powerDB(of: heard, at: $0) }
        #expect(levels.allSatisfy { $0 > -30 }, "the listener hears \(levels) dBFS")
    }

    /// An undecoded input without the client's level cannot be judged: it counts as nothing.
    @Test func anUndecodedInputWithoutALevelIsSilence() {
        var mixer = RoomAudioMixer<String>()
        for id in ["A", "B"] { mixer.addParticipant(id) }
        var tick: AudioMixerTick<String>?
        for index in 0..<10 {
            mixer.setInput(AudioMixerInput(undecoded: true), for: "A")
            mixer.setInput(AudioMixerInput(audioLevel: Self.silent), for: "B")
            tick = mixer.tick(now: .tick(index)) { _ in
                Issue.record("asked for samples")
                return nil
            }
        }
        #expect(tick?.speakers.isEmpty == true)
        #expect(tick?.mixes.allSatisfy(\.isSilent) == true)
    }
}
