import ChorusCore
import Testing
import VideoForwarder

/// Sharing a subscriber's downlink among its slots, and when a slot moves between layers.
@Suite("Video layers: allocation and switching")
struct LayerSelectionTests {
    typealias Layer = LayerAllocator.Layer
    /// A Chrome-like simulcast: 180p at 150 kbit/s, 360p at 500 kbit/s, 720p at 1.5 Mbit/s.
    static let simulcast = [Layer(bitrate: 150_000, height: 180), Layer(bitrate: 500_000, height: 360),
                            Layer(bitrate: 1_500_000, height: 720)]

    func allocate(_ budget: Int, _ demands: [LayerAllocator.Demand]) -> [Int?] {
        LayerAllocator.allocate(budget: budget, demands: demands)
    }

    @Test func aWideLinkGetsEverySlotItsTopLayer() {
        let demands = (0..<3).map { LayerAllocator.Demand(layers: Self.simulcast, priority: $0) }
        #expect(allocate(10_000_000, demands) == [2, 2, 2])
    }

    @Test func theDominantSpeakerIsUpgradedFirstAndEverySlotKeepsItsLowestLayer() {
        // Priority 0 is the third slot: it gets the upgrade; the others keep 180p.
        let demands = [LayerAllocator.Demand(layers: Self.simulcast, priority: 2),
                       LayerAllocator.Demand(layers: Self.simulcast, priority: 1),
                       LayerAllocator.Demand(layers: Self.simulcast, priority: 0)]
        #expect(allocate(1_900_000, demands) == [0, 0, 2])
        #expect(allocate(1_000_000, demands) == [0, 0, 1])
        #expect(allocate(1_400_000, demands) == [0, 1, 1])
    }

    @Test func aThinLinkPausesTheLeastImportantSlotsFirst() {
        let demands = (0..<3).map { LayerAllocator.Demand(layers: Self.simulcast, priority: $0) }
        #expect(allocate(320_000, demands) == [0, 0, nil])
        #expect(allocate(100_000, demands) == [nil, nil, nil])
        #expect(allocate(-5, demands) == [nil, nil, nil])
    }

    @Test func aHeightCapStopsTheUpgradeButNeverRemovesThePicture() {
        var demand = LayerAllocator.Demand(layers: Self.simulcast, maximumHeight: 360, priority: 0)
        #expect(allocate(10_000_000, [demand]) == [1])
        demand.maximumHeight = 90
        #expect(allocate(10_000_000, [demand]) == [0])
    }

    @Test func aSingleEncodingIsOneLayerAndASlotWithoutLayersGetsNone() {
        let single = LayerAllocator.Demand(layers: [Layer(bitrate: 800_000)], priority: 0)
        let empty = LayerAllocator.Demand(layers: [], priority: 1)
        #expect(allocate(1_000_000, [single, empty]) == [0, nil])
        #expect(allocate(500_000, [single, empty]) == [nil, nil])
    }

    @Test func goingAboveTheCurrentLayerNeedsHeadroom() {
        // 150 k + 350 k more for 360p: exactly 500 k fits a new slot, not one already on 180p.
        let fresh = LayerAllocator.Demand(layers: Self.simulcast, priority: 0)
        #expect(allocate(500_000, [fresh]) == [1])
        let onLowest = LayerAllocator.Demand(layers: Self.simulcast, priority: 0, current: 0)
        #expect(allocate(500_000, [onLowest]) == [0])
        #expect(allocate(600_000, [onLowest]) == [1])
        // Staying on (or moving down to) a layer needs no headroom.
        let onMiddle = LayerAllocator.Demand(layers: Self.simulcast, priority: 0, current: 1)
        #expect(allocate(500_000, [onMiddle]) == [1])
    }

    @Test func aForwardedLowestLayerIsKeptThroughADipButNotAClearShortfall() {
        // 150 k lowest layer: a slot forwarding it keeps it down to 75 % of that (an estimate's
        // saw-tooth), a slot that forwards nothing needs all of it to start.
        let forwarding = LayerAllocator.Demand(layers: Self.simulcast, priority: 0, current: 0)
        let paused = LayerAllocator.Demand(layers: Self.simulcast, priority: 1)
        #expect(allocate(120_000, [forwarding]) == [0])
        #expect(allocate(110_000, [forwarding]) == [nil])
        #expect(allocate(120_000, [paused]) == [nil])
        #expect(allocate(150_000, [paused]) == [0])
        // The discount is not budget: a kept layer leaves nothing for the next slot.
        #expect(allocate(200_000, [forwarding, paused]) == [0, nil])
    }

    @Test func aForwardedHigherLayerSurvivesOneBackOffButNotTwo() {
        // On 720p (1.5 M) with 180p below: one GCC back-off to 85 % keeps it, 72 % does not.
        let onTop = LayerAllocator.Demand(layers: Self.simulcast, priority: 0, current: 2)
        #expect(allocate(1_275_000, [onTop]) == [2])
        #expect(allocate(1_080_000, [onTop]) == [1])
        // Without the slot forwarding it, 85 % is not enough to start on it.
        let fresh = LayerAllocator.Demand(layers: Self.simulcast, priority: 0)
        #expect(allocate(1_275_000, [fresh]) == [1])
    }

    @Test func aTemporalLayerIsNotKeptThroughABackOffItsLayersBaseIs() {
        // 720p at 0.75 / 1.1 / 1.5 M for TID ≤ 0, 1, 2 above 180p at 150 k (one step).
        let layers = [Layer(bitrate: 150_000, height: 180),
                      Layer(bitrate: 1_500_000, height: 720, temporalBitrates: [750_000, 1_100_000, 1_500_000])]
        let onTop = LayerAllocator.Demand(layers: layers, priority: 0, current: 1, currentTemporalLayer: 2)
        // 85 % of the full rate: a frame rate step down (free to undo), not 720p kept.
        #expect(LayerAllocator.allocateSteps(budget: 1_275_000, demands: [onTop]).first??.temporalLayer == 1)
        // On the base temporal layer, the same back-off keeps it rather than losing 720p.
        let onBase = LayerAllocator.Demand(layers: layers, priority: 0, current: 1, currentTemporalLayer: 0)
        let kept = LayerAllocator.allocateSteps(budget: 150_000 + 620_000, demands: [onBase]).first ?? nil
        #expect(kept?.layer == 1 && kept?.temporalLayer == 0)
    }

    static func at(_ seconds: Double) -> MediaTime { MediaTime(nanoseconds: UInt64(seconds * 1e9)) }

    @Test func downAtOnceUpOnlyAfterHoldingAndAQuietPeriod() {
        var policy = LayerSwitchPolicy()
        #expect(policy.decide(allocated: 2, now: Self.at(0)) == .move(to: 2))
        policy.switched(to: 2, now: Self.at(0.1))
        // Down at once, even right after a switch.
        #expect(policy.decide(allocated: 0, now: Self.at(0.5)) == .move(to: 0))
        policy.switched(to: 0, now: Self.at(0.6))
        // Up: not while the layer is young, nor within 8 s of the move down.
        #expect(policy.decide(allocated: 2, now: Self.at(2)) == .stay)
        #expect(policy.decide(allocated: 2, now: Self.at(8)) == .stay)
        #expect(policy.decide(allocated: 2, now: Self.at(8.6)) == .move(to: 2))
        // Until its keyframe comes, asking again changes nothing.
        #expect(policy.decide(allocated: 2, now: Self.at(9)) == .stay)
        policy.switched(to: 2, now: Self.at(9.1))
        #expect(policy.current == 2 && policy.pending == nil && policy.switches == 3)
    }

    @Test func aMoveDownToAHeightCapDoesNotHoldBackTheMoveUp() {
        var policy = LayerSwitchPolicy()
        #expect(policy.decide(allocated: 2, now: Self.at(0)) == .move(to: 2))
        policy.switched(to: 2, now: Self.at(0.1))
        #expect(policy.decide(allocated: 1, now: Self.at(3), forcedByBandwidth: false) == .move(to: 1))
        policy.switched(to: 1, now: Self.at(3.1))
        // The cap is lifted: up after the 2 s hold, not the 8 s of a bandwidth downgrade.
        #expect(policy.decide(allocated: 2, now: Self.at(4)) == .stay)
        #expect(policy.decide(allocated: 2, now: Self.at(5.2)) == .move(to: 2))
        #expect(policy.lastDowngradeAt == nil)
    }

    @Test func aPausedSlotResumesAfterTheHoldTime() {
        var policy = LayerSwitchPolicy()
        _ = policy.decide(allocated: 1, now: Self.at(0))
        policy.switched(to: 1, now: Self.at(0.1))
        // One short budget, or two, is a dip: the slot keeps its layer.
        #expect(policy.decide(allocated: nil, now: Self.at(1)) == .stay)
        #expect(policy.decide(allocated: nil, now: Self.at(2)) == .stay)
        #expect(policy.current == 1)
        #expect(policy.decide(allocated: nil, now: Self.at(3)) == .pause)
        #expect(policy.current == nil)
        #expect(policy.decide(allocated: 0, now: Self.at(4)) == .pause)
        #expect(policy.decide(allocated: 0, now: Self.at(5.1)) == .move(to: 0))
    }

    @Test func aDipBetweenShortfallsStartsTheCountAgain() {
        var policy = LayerSwitchPolicy()
        _ = policy.decide(allocated: 0, now: Self.at(0))
        policy.switched(to: 0, now: Self.at(0))
        #expect(policy.decide(allocated: nil, now: Self.at(1)) == .stay)
        #expect(policy.decide(allocated: nil, now: Self.at(2)) == .stay)
        #expect(policy.decide(allocated: 0, now: Self.at(3)) == .stay)
        #expect(policy.decide(allocated: nil, now: Self.at(4)) == .stay)
        #expect(policy.current == 0)
    }

    @Test func aMoveDownWhileWaitingForAnUpgradeReplacesIt() {
        var policy = LayerSwitchPolicy()
        _ = policy.decide(allocated: 1, now: Self.at(0))
        policy.switched(to: 1, now: Self.at(0))
        #expect(policy.decide(allocated: 2, now: Self.at(20)) == .move(to: 2))
        // The estimate falls before 2's keyframe: stay on 1, the upgrade is off.
        #expect(policy.decide(allocated: 1, now: Self.at(20.2)) == .stay)
        #expect(policy.pending == nil && policy.current == 1)
    }

    /// The same simulcast with three temporal layers each (libwebrtc's 40 / 20 / 40 % split):
    /// the rate with TID ≤ 0, ≤ 1, ≤ 2.
    static let temporal = [Layer(bitrate: 150_000, height: 180, temporalBitrates: [60_000, 90_000, 150_000]),
                           Layer(bitrate: 500_000, height: 360, temporalBitrates: [200_000, 300_000, 500_000]),
                           Layer(bitrate: 1_500_000, height: 720, temporalBitrates: [600_000, 900_000, 1_500_000])]

    func steps(_ budget: Int, _ demands: [LayerAllocator.Demand]) -> [String] {
        LayerAllocator.allocateSteps(budget: budget, demands: demands).map { choice in
            choice.map { "\($0.layer)/\($0.temporalLayer)\($0.allTemporalLayers ? "*" : "")" } ?? "-"
        }
    }

    @Test func aShortBudgetDropsTemporalLayersBeforeTheSpatialLayer() {
        let fresh = [LayerAllocator.Demand(layers: Self.temporal, priority: 0)]
        #expect(steps(10_000_000, fresh) == ["2/2*"])
        // Short of 720p's 1.5 M: 720p at half the frame rate, not 360p.
        #expect(steps(1_200_000, fresh) == ["2/1"])
        #expect(steps(650_000, fresh) == ["2/0"])
        #expect(steps(550_000, fresh) == ["1/2*"])
        #expect(steps(250_000, fresh) == ["1/0"])
        // A thin link keeps the lowest layer at a quarter of its frame rate before pausing.
        #expect(steps(70_000, fresh) == ["0/0"])
        #expect(steps(50_000, fresh) == ["-"])
        #expect(LayerAllocator.allocate(budget: 1_200_000, demands: fresh) == [2])
        #expect(LayerAllocator.lowestChoice(of: fresh[0]) == .init(layer: 0, temporalLayer: 0, allTemporalLayers: false))
    }

    @Test func temporalStepsKeepTheHeadroomTheHoldOfTheLowestAndTheHeightCap() {
        // Staying needs no headroom; one step up does.
        let onHalfRate = LayerAllocator.Demand(layers: Self.temporal, priority: 0, current: 2, currentTemporalLayer: 1)
        #expect(steps(900_000, [onHalfRate]) == ["2/1"])
        let onQuarterRate = LayerAllocator.Demand(layers: Self.temporal, priority: 0, current: 2, currentTemporalLayer: 0)
        #expect(steps(900_000, [onQuarterRate]) == ["2/0"])
        #expect(steps(1_100_000, [onQuarterRate]) == ["2/1"])
        // The lowest step forwarded now is kept down to 75 % of its rate.
        let onLowest = LayerAllocator.Demand(layers: Self.temporal, priority: 0, current: 0, currentTemporalLayer: 0)
        #expect(steps(46_000, [onLowest]) == ["0/0"])
        #expect(steps(44_000, [onLowest]) == ["-"])
        // A height cap ends the ladder at the top step of the tallest allowed layer.
        let capped = LayerAllocator.Demand(layers: Self.temporal, maximumHeight: 360, priority: 0)
        #expect(steps(10_000_000, [capped]) == ["1/2*"])
        // A layer without temporal rates is one step among the others.
        let mixed = LayerAllocator.Demand(layers: [Self.temporal[0], Layer(bitrate: 500_000, height: 360)], priority: 0)
        #expect(steps(400_000, [mixed]) == ["0/2*"])
        #expect(steps(500_000, [mixed]) == ["1/0*"])
    }

    /// Policy steps pack a layer and its TID so that quality order is numeric order within a
    /// publisher: a drop of temporal layers is a move down (at once), taking them back a move
    /// up (after the hold and the quiet period).
    @Test func temporalMovesFollowThePolicy() {
        let step = { (layer: Int, tid: UInt8) in LayerSwitchPolicy.step(layer: layer, temporalLayer: tid) }
        #expect(LayerSwitchPolicy.layer(ofStep: step(2, 1)) == 2 && LayerSwitchPolicy.temporalLayer(ofStep: step(2, 1)) == 1)
        #expect(LayerSwitchPolicy.layer(ofStep: step(-1, 3)) == -1 && step(0, 9) == step(0, 3))
        #expect(step(1, 3) < step(2, 0))
        var policy = LayerSwitchPolicy()
        policy.switched(to: step(2, 3), now: Self.at(0))
        #expect(policy.decide(allocated: step(2, 1), now: Self.at(0.5)) == .move(to: step(2, 1)))
        policy.switched(to: step(2, 1), now: Self.at(0.5))
        #expect(policy.decide(allocated: step(2, 3), now: Self.at(4)) == .stay)
        #expect(policy.decide(allocated: step(2, 3), now: Self.at(8.6)) == .move(to: step(2, 3)))
    }
}
