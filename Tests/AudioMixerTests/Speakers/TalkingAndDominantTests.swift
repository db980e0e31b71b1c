import AudioMixer
import ChorusCore
import Testing

@Suite("TalkingDetector and DominantSpeakerDetector: events with hysteresis")
struct TalkingAndDominantTests {
    /// Feeds an activity pattern (one character per 20 ms tick: "x" active, "." quiet, "m"
    /// muted) and returns the ticks at which transitions happened.
    private func transitions(_ pattern: String) -> [(Int, TalkingTransition)] {
        var detector = TalkingDetector()
        var result: [(Int, TalkingTransition)] = []
        for (tick, mark) in pattern.enumerated() {
            if let change = detector.update(voiceActive: mark == "x", muted: mark == "m", at: .tick(tick)) {
                result.append((tick, change))
            }
        }
        return result
    }

    @Test func startsAfterAHundredMillisecondsOfActivity() {
        #expect(transitions("xxxxx").isEmpty)  // 80 ms from first to last tick
        let started = transitions("xxxxxx")
        #expect(started.count == 1 && started[0].0 == 5 && started[0].1 == .started)
    }

    @Test func aCoughDoesNotStartIt() {
        #expect(transitions("xxx.xxx.xx..xxxx.").isEmpty)
    }

    @Test func shortPausesDoNotStopIt() {
        let pattern = "xxxxxx" + String(repeating: ".", count: 20) + "xxxx" + String(repeating: ".", count: 24)
        #expect(transitions(pattern).map(\.1) == [.started])
    }

    @Test func stopsAfterHalfASecondOfQuiet() {
        let pattern = "xxxxxx" + String(repeating: ".", count: 30)
        let changes = transitions(pattern)
        #expect(changes.map(\.1) == [.started, .stopped])
        #expect(changes[1].0 == 6 + 25, "stopped at tick \(changes[1].0)")
    }

    @Test func muteStopsAtOnceAndBlocksStarting() {
        let changes = transitions("xxxxxxxm" + "mmmmmmmmmm")
        #expect(changes.map(\.0) == [5, 7])
        #expect(changes.map(\.1) == [.started, .stopped])
    }

    @Test func clockGoingBackwardsDoesNotTrap() {
        var detector = TalkingDetector()
        _ = detector.update(voiceActive: true, at: .seconds(10))
        #expect(detector.update(voiceActive: true, at: .seconds(1)) == nil)
        var reset = detector
        #expect(reset.reset() == nil)
    }

    private func candidates(_ levels: [Int: Float?]) -> [SpeakerCandidate<Int>] {
        levels.keys.sorted().map { id in
            SpeakerCandidate(id: id, levelDBov: levels[id]! ?? -127, voiceActive: levels[id]! != nil)
        }
    }

    @Test func firstTalkerBecomesDominantAndKeepsItThroughSilence() {
        var detector = DominantSpeakerDetector<Int>()
        var changes: [Int] = []
        for tick in 0..<200 {
            let level: Float? = tick < 50 ? -20 : nil
            if detector.update(candidates([1: level, 2: nil])) { changes.append(tick) }
        }
        #expect(detector.dominantSpeaker == 1)
        #expect(changes.count == 1 && changes[0] < 5)
    }

    @Test func switchNeedsALouderSustainedChallenger() {
        var detector = DominantSpeakerDetector<Int>()
        for _ in 0..<100 { detector.update(candidates([1: -25, 2: nil])) }
        // A 100 ms interjection does not switch.
        for tick in 0..<105 {
            detector.update(candidates([1: -25, 2: tick < 5 ? -10 : nil]))
        }
        #expect(detector.dominantSpeaker == 1)
        // Participant 1 falls silent and 2 talks on: 2 takes over, within a second or so.
        var switchTick: Int?
        for tick in 0..<150 where switchTick == nil {
            if detector.update(candidates([1: nil, 2: -20])) { switchTick = tick }
        }
        #expect(detector.dominantSpeaker == 2)
        #expect((10...60).contains(switchTick ?? -1), "switched at \(String(describing: switchTick))")
    }

    @Test func twoEqualTalkersDoNotFlap() {
        var detector = DominantSpeakerDetector<Int>()
        var changes = 0
        for tick in 0..<1_000 {
            let wobble = Float(tick % 7) - 3
            if detector.update(candidates([1: -20 + wobble, 2: -20 - wobble])) { changes += 1 }
        }
        #expect(changes == 1)
    }

    @Test func dominantLeavingIsReported() {
        var detector = DominantSpeakerDetector<Int>()
        for _ in 0..<20 { detector.update(candidates([1: -20, 2: nil])) }
        detector.remove(1)
        let reported = detector.update(candidates([2: nil]))
        #expect(reported && detector.dominantSpeaker == nil)
        let reportedAgain = detector.update(candidates([2: nil]))
        #expect(!reportedAgain)
    }
}
