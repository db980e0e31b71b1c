import AudioMixer
import Testing

@Suite("AudioMixerCore and MixPlan: the sums and which mixes a tick needs")
struct AudioMixerCoreTests {
    private func render(_ core: inout AudioMixerCore, excluding source: Int?) -> [Int16] {
        var limiter = SoftLimiter()
        var output = [Int16](repeating: 0, count: AudioMixerCore.frameLength)
        core.renderMix(excluding: source, limiter: &limiter, into: &output)
        return output
    }

    @Test func fullAndMinusOneMixesAreExactSums() {
        var core = AudioMixerCore(maximumSources: 3)
        core.beginFrame()
        let a = (0..<960).map { Int16(truncatingIfNeeded: $0 * 7 % 4_000 - 2_000) }
        let b = (0..<960).map { Int16(truncatingIfNeeded: $0 * 13 % 6_000 - 3_000) }
        let c = (0..<960).map { Int16(truncatingIfNeeded: $0 * 3 % 2_000 - 1_000) }
        #expect(core.addSource(a) == 0 && core.addSource(b) == 1 && core.addSource(c) == 2)
        #expect(core.addSource(c) == nil, "a fourth source does not fit")
        let sum = { (x: [Int16], y: [Int16]) in zip(x, y).map { $0 + $1 } }
        #expect(render(&core, excluding: nil) == sum(sum(a, b), c))
        #expect(render(&core, excluding: 0) == sum(b, c))
        #expect(render(&core, excluding: 1) == sum(a, c))
        #expect(render(&core, excluding: 2) == sum(a, b))
        #expect(render(&core, excluding: 7) == sum(sum(a, b), c), "an unknown source excludes nothing")
    }

    @Test func beginFrameClearsTheSum() {
        var core = AudioMixerCore(maximumSources: 2)
        core.beginFrame()
        core.addSource([Int16](repeating: 1_000, count: 960))
        core.beginFrame()
        #expect(core.sourceCount == 0)
        #expect(render(&core, excluding: nil).allSatisfy { $0 == 0 })
    }

    @Test func shortFramesArePaddedAndLongOnesTruncated() {
        var core = AudioMixerCore(maximumSources: 2)
        core.beginFrame()
        core.addSource([Int16](repeating: 100, count: 10))
        core.addSource([Int16](repeating: 1, count: 5_000))
        let output = render(&core, excluding: nil)
        #expect(output.count == 960)
        #expect(output[0..<10].allSatisfy { $0 == 101 } && output[10...].allSatisfy { $0 == 1 })
    }

    @Test func floatSourcesAreSanitised() {
        var core = AudioMixerCore(maximumSources: 2)
        core.beginFrame()
        core.addSource([Float](repeating: .nan, count: 960))
        core.addSource([Float](repeating: 0.25, count: 960))
        #expect(render(&core, excluding: nil).allSatisfy { $0 == 8_192 })
        #expect(render(&core, excluding: 1).allSatisfy { $0 == 0 })
    }

    @Test func zeroSourceCoreRendersSilence() {
        var core = AudioMixerCore(maximumSources: 0)
        core.beginFrame()
        #expect(core.addSource([Int16](repeating: 1, count: 960)) == nil)
        #expect(render(&core, excluding: nil).allSatisfy { $0 == 0 })
    }

    /// (speakers, listeners, speakers that receive) → mixes.
    @Test(arguments: [
        ([String](), 5, [String](), [MixPlan<String>.Mix.full]),
        (["A"], 5, ["A"], [.full, .minusOne("A")]),
        (["A", "B", "C"], 47, ["A", "B", "C"], [.full, .minusOne("A"), .minusOne("B"), .minusOne("C")]),
        (["A", "B"], 0, ["A", "B"], [.minusOne("A"), .minusOne("B")]),
        (["A", "B"], 3, ["B"], [.full, .minusOne("B")]),
        (["A", "A"], 1, ["A"], [.full, .minusOne("A")]),
        ([], 0, [], []),
    ])
    func mixPlanTable(speakers: [String], listeners: Int, receiving: [String], expected: [MixPlan<String>.Mix]) {
        var plan = MixPlan<String>()
        plan.update(speakers: speakers, listenerCount: listeners) { receiving.contains($0) }
        #expect(plan.mixes == expected)
        #expect(plan.encodeCount <= Set(speakers).count + 1)
    }

    @Test func mixPlanRecipients() {
        var plan = MixPlan<String>()
        plan.update(speakers: ["A", "B"], listenerCount: 2)
        #expect(plan.mix(for: "A") == .minusOne("A") && plan.mix(for: "Z") == .full)
        #expect(plan.mixIndex(for: "Z") == 0 && plan.mixIndex(for: "B") == 2)
        #expect(plan.sources(of: .full) == ["A", "B"] && plan.sources(of: .minusOne("A")) == ["B"])
    }
}
