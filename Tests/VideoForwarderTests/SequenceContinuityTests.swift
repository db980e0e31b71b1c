import ChorusCore
import Testing
import VideoForwarder

/// The map that takes dropped values out of a counter, and the per-TID rate meter.
@Suite("VideoForwarder: sequence continuity and temporal layer rates")
struct SequenceContinuityTests {
    @Test func droppedValuesAreTakenOutOfTheOutput() {
        var map = SequenceContinuity(capacity: 8)
        func offset(_ value: UInt64) -> UInt64? { map.offset(of: value) }
        func drop(_ value: UInt64) -> Bool { map.drop(value) }
        #expect(offset(100) == 0)
        #expect(drop(101) && drop(102))
        #expect(offset(103) == 2)  // 103 → 101
        #expect(drop(105))
        #expect(offset(106) == 3)  // 106 → 103
        // Reordered: 104 was never dropped, so its output (102) was kept free.
        #expect(offset(104) == 2)
        // A dropped value gets no output, and dropping it again is no news.
        #expect(offset(102) == nil)
        #expect(drop(102))
        // Too late: 103 went out already, nothing can take it back.
        #expect(!drop(103))
        #expect(map.dropped == 3 && map.newest == 106)
    }

    @Test func valuesOlderThanTheRememberedDropsGetNoOutput() {
        var map = SequenceContinuity(capacity: 4)
        func offset(_ value: UInt64) -> UInt64? { map.offset(of: value) }
        #expect(offset(10) == 0)
        for value in stride(from: UInt64(11), through: 21, by: 2) {  // 11…21, 6 drops
            let accepted = map.drop(value)
            #expect(accepted)
        }
        // The ring holds 15, 17, 19, 21: below 15 the count is lost.
        #expect(offset(12) == nil)
        #expect(offset(16) == 3)  // 11, 13, 15
        #expect(offset(22) == 6)
        map.reset()
        #expect(offset(12) == 0 && map.dropped == 0)
    }

    /// Random drops and arrival order against a straightforward model: every value forwarded
    /// gets the value less the drops below it, whatever the order.
    @Test func randomReorderingMatchesTheModel() {
        var random = SplitMix64(seed: 7)
        var map = SequenceContinuity(capacity: 64)
        var dropped = Set<UInt64>()
        var seen: UInt64 = 1_000
        for _ in 0..<2_000 {
            // Mostly the next value, sometimes one of the last few again out of order.
            let back = random.next() % 8 == 0 ? random.next() % 5 : 0
            let value: UInt64
            let isNew = back == 0 || seen <= 1_005
            if isNew {
                seen += 1
                value = seen
            } else {
                value = seen - back
            }
            if isNew, random.next() % 3 == 0 {
                let accepted = map.drop(value)
                #expect(accepted)
                dropped.insert(value)
            } else if let offset = map.offset(of: value) {
                #expect(!dropped.contains(value))
                #expect(offset == UInt64(dropped.count { $0 < value }), "value \(value)")
            } else {
                #expect(dropped.contains(value), "value \(value) refused")
            }
        }
    }

    /// 100 kbit/s at TID 0, 50 at TID 1, 100 at TID 2: read as 100, 150 and 250 k cumulatively;
    /// a stream without temporal layers has no steps.
    @Test func temporalLayerRatesAreCumulative() throws {
        var meter = TemporalLayerBitrates()
        var plain = TemporalLayerBitrates()
        for tick in 1...200 {  // 10 ms apart: 125, 62.5 and 125 bytes each → 100, 50, 100 kbit/s
            let now = MediaTime.milliseconds(5_000 + 10 * UInt64(tick))
            meter.add(bytes: 125, temporalLayer: 0, now: now)
            if tick % 2 == 0 { meter.add(bytes: 125, temporalLayer: 1, now: now) }
            meter.add(bytes: 125, temporalLayer: 2, now: now)
            plain.add(bytes: 125, temporalLayer: nil, now: now)
        }
        let rates = meter.cumulativeBitsPerSecond(now: .milliseconds(7_000))
        #expect(rates.count == 3)
        for (rate, expected) in zip(rates, [100_000, 150_000, 250_000]) {
            #expect(abs(rate - expected) < expected / 50, "\(rates)")
        }
        #expect(plain.cumulativeBitsPerSecond(now: .milliseconds(7_000)).isEmpty)
        #expect(meter.hasTemporalLayers(now: .milliseconds(7_000)) && !plain.hasTemporalLayers(now: .milliseconds(7_000)))
        #expect(meter.cumulativeBitsPerSecond(now: .milliseconds(9_000)).isEmpty, "a stopped stream")
    }
}
