import AudioMixer
import ChorusCore
import Testing

@Suite("RoomAudioMixer in a large room")
struct LargeRoomTickTests {
    /// 500 participants, 3 talking (tones), the rest sending comfort noise, every level measured
    /// on the decoded audio (the aiortc case, the most expensive): at most four encodes, every
    /// participant a recipient of exactly one mix, the three talkers chosen. What the tick costs
    /// is measured by `Benchmarks/MediaPath` (`make bench`), not here.
    @Test func fiveHundredParticipantTick() {
        var mixer = RoomAudioMixer<Int>()
        var handles: [RoomAudioMixer<Int>.Handle] = []
        for id in 0..<500 { handles.append(mixer.addParticipant(id, ssrc: SSRC(UInt32(id + 1)))) }
        var tones = (0..<3).map { MixerTestTone(frequency: 300 + 150 * Double($0), amplitude: 0.2) }
        var noise = MixerTestNoise(seed: 11, rmsDBov: -65)
        let noiseFrames = (0..<8).map { _ in noise.nextFrame() }
        for tick in 0..<50 {
            var wereSpeakers: Set<Int> = []
            for (id, handle) in handles.enumerated() {
                let frame = id < 3 ? tones[id].nextFrame() : noiseFrames[(id + tick) % noiseFrames.count]
                // The handle form tells each input whether it was a speaker at the last tick.
                mixer.setInput(for: handle) { wasSpeaker in
                    if wasSpeaker { wereSpeakers.insert(id) }
                    return AudioMixerInput(frame: .int16(frame))
                }
            }
            if tick > 3 { #expect(wereSpeakers == [0, 1, 2]) }
            let result = mixer.tick(now: .tick(tick))
            #expect(result.encodeCount <= 4)
            #expect(result.mixes.reduce(0) { $0 + $1.recipients.count } == 500)
            for mix in result.mixes {
                // Slots name the same recipients, in the same order (ids were added in slot order).
                #expect(mix.recipientSlots == mix.recipients.map { handles[$0].slot })
            }
            if tick > 2 { #expect(Set(result.speakers) == [0, 1, 2]) }
        }
    }
}
