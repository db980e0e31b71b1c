import AudioMixer
import ChorusCore
import RTP
import Testing

@Suite("RoomAudioMixer: every participant hears the room minus itself")
struct RoomAudioMixerTests {
    /// The issue's test: A sends 440 Hz, B 880 Hz, C silence; through a PCM pass-through codec
    /// and RTP, C hears both tones, A only 880 Hz, B only 440 Hz (absent tone ≥ 40 dB down).
    @Test func eachHearsTheOthersButNotItself() throws {
        var room = MixerTestRoom()
        room.join("A", .tone(MixerTestTone(frequency: 440, amplitude: 0.3)))
        room.join("B", .tone(MixerTestTone(frequency: 880, amplitude: 0.3)))
        room.join("C", .silence)
        try room.run(5)
        room.recording = true
        try room.run(10)  // 9,600 samples: a whole number of cycles of both tones

        func level(_ who: String, _ frequency: Double) -> Double {
            MixerTestSpectrum.powerDB(of: room.heard[who]!, at: frequency)
        }
        print("A hears 880 Hz at \(level("A", 880)) dB, 440 Hz at \(level("A", 440)) dB;",
              "B hears 440 Hz at \(level("B", 440)) dB, 880 Hz at \(level("B", 880)) dB")
        #expect(level("C", 440) > -30 && level("C", 880) > -30)
        #expect(level("A", 880) - level("A", 440) >= 40, "A must not hear itself")
        #expect(level("B", 440) - level("B", 880) >= 40, "B must not hear itself")
        #expect(abs(level("C", 440) - level("C", 880)) < 1)
        #expect(room.encoder.encodeCount <= 15 * 3)
    }

    @Test func aRoomOfFiftyWithThreeSpeakersNeverEncodesMoreThanFourMixes() throws {
        var room = MixerTestRoom()
        for index in 0..<3 {
            room.join("S\(index)", .tone(MixerTestTone(frequency: 300 + 200 * Double(index), amplitude: 0.2)))
        }
        for index in 0..<47 {
            let source: MixerTestRoom.Source =
                index % 2 == 0 ? .silence : .noise(MixerTestNoise(seed: UInt64(index), rmsDBov: -70))
            room.join("L\(index)", source)
        }
        for _ in 0..<50 {
            let encodesBefore = room.encoder.encodeCount
            let tick = try room.runTick()
            let encodes = room.encoder.encodeCount - encodesBefore
            #expect(tick.encodeCount <= 4 && encodes <= 4)
            #expect(Set(tick.speakers) == ["S0", "S1", "S2"])
            // Everyone receives exactly one mix.
            let recipients = tick.mixes.flatMap(\.recipients)
            #expect(recipients.count == 50 && Set(recipients).count == 50)
        }
        #expect(room.encoder.encodeCount == 50 * 4)
        // A clearly louder newcomer takes a place: still at most 4 encodes on every tick.
        room.sources["L1"] = .tone(MixerTestTone(frequency: 1_500, amplitude: 0.9))
        var speakerSets: Set<Set<String>> = []
        for _ in 0..<50 {
            let tick = try room.runTick()
            #expect(tick.encodeCount <= 4 && tick.speakers.count == 3)
            speakerSets.insert(Set(tick.speakers))
        }
        #expect(speakerSets.count == 2, "exactly one switch, no flapping")
    }

    @Test func talkingAndDominantEventsThroughTheMixer() throws {
        var room = MixerTestRoom()
        room.join("A", .silence)
        room.join("B", .silence)
        var events: [(Int, AudioMixerEvent<String>)] = []
        for index in 0..<80 {
            let talks = (10..<40).contains(index)
            room.sources["A"] = talks ? .tone(MixerTestTone(frequency: 440, amplitude: 0.3)) : .silence
            for event in try room.runTick().events { events.append((index, event)) }
        }
        let talking = events.filter { $0.1.name.hasPrefix("talking.") }
        // Started 100 ms after the first active tick; stopped 500 ms after the voice-activity
        // decision fell, which its own 100 ms hangover holds after the tone's last tick (39).
        #expect(talking.map(\.0) == [15, 39 + 5 + 1 + 25])
        #expect(talking.map(\.1) == [.talkingStarted("A"), .talkingStopped("A")])
        #expect(events.filter { $0.1.name == "speaker.dominant" }.map(\.1) == [.dominantSpeaker("A")])
    }

    @Test func newSpeakersOwnMixStartsFromTheFullMixOnce() throws {
        var room = MixerTestRoom()
        room.join("A", .tone(MixerTestTone(frequency: 440, amplitude: 0.3)))
        room.join("B", .silence)
        var flags: [Bool] = []
        for index in 0..<20 {
            room.sources["B"] = index >= 5 ? .tone(MixerTestTone(frequency: 880, amplitude: 0.3)) : .silence
            let tick = try room.runTick()
            if let own = tick.mixes.first(where: { $0.kind == .minusOne("B") }) {
                flags.append(own.startsFromFullMix)
            }
        }
        #expect(flags.first == true && flags.dropFirst().allSatisfy { !$0 } && flags.count == 15)
    }

    @Test func threeFullScaleSpeakersAreLimitedNotClipped() throws {
        var room = MixerTestRoom()
        for (index, frequency) in [440.0, 550, 660].enumerated() {
            room.join("S\(index)", .tone(MixerTestTone(frequency: frequency, amplitude: 1)))
        }
        room.join("L", .silence)
        room.recording = true
        try room.run(25)
        let heard = room.heard["L"]!
        #expect(heard.allSatisfy { abs(Int($0)) < 32_767 })
        #expect(heard.map { abs(Int($0)) }.max()! > 20_000)
    }

    @Test func mutedParticipantIsNeverMixedButHearsTheRoom() throws {
        var room = MixerTestRoom()
        room.join("A", .tone(MixerTestTone(frequency: 440, amplitude: 0.3)))
        room.join("M", .tone(MixerTestTone(frequency: 1_000, amplitude: 0.5)))
        room.join("C", .silence)
        room.muted = ["M"]
        room.recording = true
        for tick in try room.run(20) {
            #expect(!tick.speakers.contains("M"))
            #expect(tick.mixes.allSatisfy { !$0.contributingSources.contains("M") })
            #expect(tick.mix(for: "M")?.kind == .full)
            #expect(!tick.events.contains(.talkingStarted("M")))
        }
        for who in ["A", "C", "M"] {
            #expect(MixerTestSpectrum.powerDB(of: room.heard[who]!, at: 1_000) < -100, "\(who) hears the muted tone")
        }
        #expect(MixerTestSpectrum.powerDB(of: room.heard["M"]!, at: 440) > -30)
    }

    @Test func muteTakesASpeakerOutOfTheMixAtOnce() throws {
        var room = MixerTestRoom()
        room.join("A", .tone(MixerTestTone(frequency: 440, amplitude: 0.3)))
        room.join("B", .silence)
        try room.run(10)
        #expect(try room.runTick().speakers == ["A"])
        room.muted = ["A"]
        let tick = try room.runTick()
        #expect(tick.speakers.isEmpty)
        #expect(tick.events.contains(.talkingStopped("A")))
        #expect(tick.mixes.count == 1 && tick.mixes[0].isSilent)
    }

    @Test func speakersMixIsSilentWhenAlone() throws {
        var room = MixerTestRoom()
        room.join("A", .tone(MixerTestTone(frequency: 440, amplitude: 0.3)))
        room.join("B", .silence)
        let tick = try room.run(3).last!
        #expect(tick.mixes.map(\.kind) == [.full, .minusOne("A")])
        let own = tick.mix(for: "A")!
        #expect(own.isSilent && own.samples.allSatisfy { $0 == 0 })
        #expect(tick.mix(for: "B")!.contributingSources == ["A"])
    }

    /// A speaker pausing between words is still a speaker for a while (hysteresis), but while
    /// its frames are silence it contributes nothing: its own mix has the full mix's sources
    /// (the room then sends it the full mix's encode), while a pause filled with background
    /// noise still counts, so that background is not pumped in and out of the mix.
    @Test func aSilentSpeakerContributesNothingButItsBackgroundDoes() throws {
        var room = MixerTestRoom()
        room.join("A", .tone(MixerTestTone(frequency: 440, amplitude: 0.3)))
        room.join("B", .tone(MixerTestTone(frequency: 660, amplitude: 0.3)))
        room.join("C", .tone(MixerTestTone(frequency: 880, amplitude: 0.3)))
        room.join("L", .silence)
        try room.run(10)
        room.sources["A"] = .silence
        room.sources["B"] = .noise(MixerTestNoise(seed: 7, rmsDBov: -50))
        let tick = try room.runTick()
        #expect(Set(tick.speakers) == ["A", "B", "C"], "still speakers in their first paused tick")
        #expect(Set(tick.mix(for: "L")!.contributingSources) == ["B", "C"])
        #expect(tick.mix(for: "A")!.contributingSources == tick.mix(for: "L")!.contributingSources)
        #expect(tick.mix(for: "B")!.contributingSources == ["C"])
        #expect(tick.mix(for: "C")!.contributingSources == ["B"])
    }

    @Test func noFullMixWhenEveryoneSpeaks() throws {
        var room = MixerTestRoom()
        room.join("A", .tone(MixerTestTone(frequency: 440, amplitude: 0.2)))
        room.join("B", .tone(MixerTestTone(frequency: 660, amplitude: 0.2)))
        let tick = try room.run(3).last!
        #expect(tick.mixes.map(\.kind) == [.minusOne("A"), .minusOne("B")])
        #expect(tick.encodeCount == 2)
    }

    /// PATCH of a live room's `mixedSpeakers`: lowering it drops the quietest speakers at once
    /// (and their own mixes); raising it lets the next tick fill the new places.
    @Test func mixedSpeakersChangesOnALiveMixer() throws {
        var room = MixerTestRoom(mixedSpeakers: 3)
        let amplitudes = [0.4, 0.3, 0.2, 0.1]
        for (index, amplitude) in amplitudes.enumerated() {
            room.join("S\(index)", .tone(MixerTestTone(frequency: 300 + 200 * Double(index), amplitude: amplitude)))
        }
        room.join("L", .silence)
        var tick = try room.run(10).last!
        #expect(Set(tick.speakers) == ["S0", "S1", "S2"])
        room.mixer.setMixedSpeakers(1)
        tick = try room.run(1).last!
        #expect(tick.speakers == ["S0"])
        #expect(tick.encodeCount == 2)
        #expect(tick.mix(for: "L")?.contributingSources == ["S0"])
        room.mixer.setMixedSpeakers(4)
        tick = try room.run(10).last!
        #expect(Set(tick.speakers) == ["S0", "S1", "S2", "S3"])
        #expect(tick.encodeCount == 5)
        #expect(Set(tick.mix(for: "L")?.contributingSources ?? []) == ["S0", "S1", "S2", "S3"])
    }

    @Test func csrcsAndLevelsDescribeTheContributors() throws {
        var room = MixerTestRoom()
        room.join("A", .tone(MixerTestTone(frequency: 440, amplitude: 0.5)))
        room.join("B", .tone(MixerTestTone(frequency: 880, amplitude: 0.05)))
        room.join("C", .silence)
        let tick = try room.run(3).last!
        let full = tick.mix(for: "C")!
        #expect(full.contributingSources == ["A", "B"])  // loudest first
        #expect(full.csrcs == [room.ssrcs["A"]!, room.ssrcs["B"]!])
        // A sine of peak a is 20·log10(a/√2) dBov: 0.5 → -9 dBov, 0.05 → -29 dBov.
        #expect(full.csrcAudioLevels == [9, 29])
        #expect(tick.mix(for: "A")!.csrcs == [room.ssrcs["B"]!])
        #expect(tick.mix(for: "B")!.csrcs == [room.ssrcs["A"]!])
    }

    @Test func removedParticipantLeavesTheMixAndStopsTalking() throws {
        var room = MixerTestRoom()
        room.join("A", .tone(MixerTestTone(frequency: 440, amplitude: 0.3)))
        room.join("B", .silence)
        try room.run(10)
        room.mixer.removeParticipant("A")
        room.order.removeAll { $0 == "A" }
        let tick = try room.runTick()
        #expect(tick.speakers.isEmpty)
        #expect(tick.events.contains(.talkingStopped("A")))
        #expect(tick.events.contains(.dominantSpeaker(nil)))
        #expect(tick.mixes.flatMap(\.recipients) == ["B"])
        #expect(room.mixer.participantCount == 1)
    }

    @Test func staleHandlesAreIgnored() {
        var mixer = RoomAudioMixer<String>()
        let old = mixer.addParticipant("A")
        mixer.removeParticipant("A")
        let new = mixer.addParticipant("B")  // reuses A's slot
        let staleAccepted = mixer.setInput(AudioMixerInput(muted: true), for: old)
        let currentAccepted = mixer.setInput(AudioMixerInput(muted: true), for: new)
        let again = mixer.addParticipant("B")
        let unknownAccepted = mixer.setInput(AudioMixerInput(), for: "nobody")
        #expect(!staleAccepted && currentAccepted && !unknownAccepted)
        #expect(again == new)
    }

    @Test func floatFramesAndReportedLevelsWork() {
        var mixer = RoomAudioMixer<String>()
        mixer.addParticipant("A")
        mixer.addParticipant("B")
        var tone = MixerTestTone(frequency: 440, amplitude: 0.3)
        var tick: AudioMixerTick<String>?
        for index in 0..<8 {
            // A's client reports -13 dBov with V=1; B reports silence.
            let reported = SSRCAudioLevel(byte: 0x80 | 13)
            mixer.setInput(AudioMixerInput(frame: .float(tone.nextFloatFrame()), audioLevel: reported), for: "A")
            mixer.setInput(AudioMixerInput(frame: nil, audioLevel: SSRCAudioLevel(byte: 127)), for: "B")
            tick = mixer.tick(now: .tick(index))
        }
        #expect(tick?.speakers == ["A"])
        #expect(tick?.mix(for: "B")?.samples.contains { abs($0) > 9_000 } == true)
        #expect(tick?.dominantSpeaker == "A")
    }

    /// aiortc sends V=0 on every packet whatever the audio: the level decides, so a loud
    /// participant with V=0 is a speaker and talks, and a silent one with V=1 is neither.
    @Test func voiceActivityFlagIsIgnoredTheLevelDecides() {
        var mixer = RoomAudioMixer<String>()
        mixer.addParticipant("A")
        mixer.addParticipant("B")
        mixer.addParticipant("C")
        var events: [AudioMixerEvent<String>] = []
        for index in 0..<10 {
            mixer.setInput(AudioMixerInput(audioLevel: SSRCAudioLevel(byte: 10)), for: "A")  // loud, V=0
            mixer.setInput(AudioMixerInput(audioLevel: SSRCAudioLevel(byte: 0x80 | 127)), for: "B")  // silent, V=1
            let withoutVAD = SSRCAudioLevel(byte: 12, voiceActivityNegotiated: false)
            mixer.setInput(AudioMixerInput(audioLevel: withoutVAD), for: "C")
            let tick = mixer.tick(now: .tick(index))
            #expect(tick.speakers == ["A", "C"])
            events += tick.events
        }
        #expect(events.contains(.talkingStarted("A")) && events.contains(.talkingStarted("C")))
        #expect(!events.contains(.talkingStarted("B")))
    }
}
