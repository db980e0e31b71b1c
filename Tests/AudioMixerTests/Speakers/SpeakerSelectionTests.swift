import AudioMixer
import Testing

@Suite("SpeakerSelection: top-N speakers with hysteresis")
struct SpeakerSelectionTests {
    /// A participant's script: level per tick (nil = not voice-active), muted flag.
    typealias Script = (Int) -> (level: Float?, muted: Bool)

    /// Runs `ticks` ticks of the scripts and returns the speaker set after each tick.
    private func run(
        _ scripts: [String: Script], ticks: Int, configuration: SpeakerSelectionConfiguration = .init()
    ) -> [[String]] {
        var selection = SpeakerSelection<String>(configuration: configuration)
        return (0..<ticks).map { tick in
            let candidates = scripts.keys.sorted().map { id in
                let (level, muted) = scripts[id]!(tick)
                return SpeakerCandidate(id: id, levelDBov: level ?? -127, voiceActive: level != nil, muted: muted)
            }
            return selection.update(candidates)
        }
    }

    /// A deterministic ±`spread` dB wobble per participant and tick.
    private static func wobble(_ seed: Int, _ tick: Int, spread: Float) -> Float {
        let hash = UInt32(truncatingIfNeeded: (seed &* 7_919 &+ tick &* 104_729) &* 2_654_435_761) >> 16
        return (Float(hash) / 65_535 * 2 - 1) * spread
    }

    private func steady(_ level: Float, seed: Int, spread: Float = 3, from start: Int = 0) -> Script {
        { tick in (tick >= start ? level + Self.wobble(seed, tick, spread: spread) : nil, false) }
    }

    @Test func firstSpeakersTakeFreePlacesAtOnce() {
        let scripts = ["A": steady(-30, seed: 1), "B": steady(-20, seed: 2), "C": steady(-40, seed: 3, from: 2)]
        let sets = run(scripts, ticks: 3)
        #expect(Set(sets[0]) == ["A", "B"])
        #expect(sets[2] == sets[0] + ["C"])
    }

    @Test func stableUnderSmallFluctuations() {
        let scripts: [String: Script] = [
            "A": steady(-22, seed: 1), "B": steady(-24, seed: 2), "C": steady(-26, seed: 3),
            "D": steady(-23, seed: 4, from: 5),  // a similar newcomer, ±3 dB
        ]
        let sets = run(scripts, ticks: 1_000)
        #expect(Set(sets[4]) == ["A", "B", "C"])
        #expect(sets[4...].allSatisfy { $0 == sets[4] }, "the speaker set flapped")
    }

    /// How much louder a newcomer is than the quietest speaker, and whether it takes over.
    @Test(arguments: [(Float(2), false), (4.5, false), (9, true), (20, true)])
    func newcomerMargin(advantage: Float, switches: Bool) {
        let scripts: [String: Script] = [
            "A": steady(-20, seed: 1, spread: 0.5), "B": steady(-20, seed: 2, spread: 0.5),
            "C": steady(-30, seed: 3, spread: 0.5), "D": steady(-30 + advantage, seed: 4, spread: 0.5, from: 10),
        ]
        let last = run(scripts, ticks: 200).last!
        #expect(last.contains("D") == switches)
        #expect(last.contains("C") == !switches)
    }

    /// A loud burst must last `replacementTicks` (5) ticks beyond the smoothing to take a place.
    @Test(arguments: [(2, false), (4, false), (30, true)])
    func loudBurstDuration(ticks burst: Int, switches: Bool) {
        let scripts: [String: Script] = [
            "A": steady(-20, seed: 1), "B": steady(-20, seed: 2), "C": steady(-25, seed: 3),
            "D": { tick in ((10..<(10 + burst)).contains(tick) ? -5 : nil, false) },
        ]
        let sets = run(scripts, ticks: 60)
        #expect(sets.contains { $0.contains("D") } == switches)
    }

    @Test func clearlyLouderNewcomerReplacesTheQuietestInItsPlace() {
        let scripts: [String: Script] = [
            "A": steady(-20, seed: 1), "B": steady(-30, seed: 2), "C": steady(-22, seed: 3),
            "D": steady(-8, seed: 4, from: 10),
        ]
        let sets = run(scripts, ticks: 40)
        let switchTick = sets.firstIndex { $0.contains("D") }!
        #expect((15...20).contains(switchTick), "switched at tick \(switchTick)")
        let before = sets[switchTick - 1]
        #expect(Set(before) == ["A", "B", "C"])
        #expect(sets[switchTick] == before.map { $0 == "B" ? "D" : $0 }, "D takes B's position")
    }

    @Test func speakerLeavesAfterTheHangoverOfSilence() {
        let scripts: [String: Script] = [
            "A": { tick in (tick < 20 ? -20 : nil, false) },
            "B": { tick in (tick < 20 || tick >= 30 ? -25 : nil, false) },  // a 200 ms pause
        ]
        let sets = run(scripts, ticks: 60)
        #expect(sets[19] == ["A", "B"])
        #expect(sets[43] == ["A", "B"], "left before the 500 ms hangover")
        #expect(sets[44] == ["B"], "A should leave after 25 silent ticks")
    }

    @Test func mutedOrAbsentSpeakersLeaveAtOnceAndTheirPlaceIsRefilled() {
        var selection = SpeakerSelection<String>(configuration: .init(maximumSpeakers: 2))
        func tick(_ muted: Set<String>, _ present: [String] = ["A", "B", "C"]) -> [String] {
            selection.update(present.map {
                SpeakerCandidate(id: $0, levelDBov: -20, voiceActive: true, muted: muted.contains($0))
            })
        }
        #expect(tick([]) == ["A", "B"])
        #expect(tick(["A"]) == ["B", "C"])
        #expect(tick([], ["A", "C"]) == ["C", "A"])
        selection.remove("C")
        #expect(selection.speakers == ["A"])
    }

    @Test func zeroSpeakersMixNobody() {
        let sets = run(["A": steady(-10, seed: 1)], ticks: 5, configuration: .init(maximumSpeakers: 0))
        #expect(sets.allSatisfy { $0.isEmpty })
    }

    @Test func garbageLevelsDoNotTrap() {
        var selection = SpeakerSelection<Int>()
        let speakers = selection.update([
            SpeakerCandidate(id: 1, levelDBov: .nan, voiceActive: true),
            SpeakerCandidate(id: 2, levelDBov: .infinity, voiceActive: true),
            SpeakerCandidate(id: 2, levelDBov: -.infinity, voiceActive: true),  // duplicate ID
        ])
        #expect(Set(speakers) == [1, 2])
        #expect(selection.smoothedLevel(of: 2)! <= 0)
    }
}
