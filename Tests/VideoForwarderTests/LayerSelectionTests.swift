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
}
