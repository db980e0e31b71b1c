import ChorusCore
import Testing
import VideoForwarder

/// The sliding-window rate meter behind each simulcast layer's bitrate, on a simulated clock.
@Suite("VideoForwarder: bitrate window")
struct BitrateWindowTests {
    /// 2.5 Mbit/s in 1,200-byte packets every ~3.84 ms for 3 s: within 1 % once a window is full.
    @Test func aSteadyStreamIsMeasured() {
        var meter = BitrateWindow()
        let interval: UInt64 = 3_840_000  // 1,200 B × 8 / 2.5 Mbit/s
        var now = MediaTime.seconds(50)
        for index in 1...781 {
            now = MediaTime.seconds(50).adding(nanoseconds: UInt64(index) * interval)
            meter.add(bytes: 1_200, now: now)
            if index > 300 {
                let measured = Double(meter.bitsPerSecond(now: now))
                #expect(abs(measured - 2_500_000) < 25_000, "at packet \(index): \(measured)")
            }
        }
        #expect(meter.window == 1_000_000_000)
    }

    /// A stream that just started reads low, never high; one that stopped reads 0 a window later.
    @Test func startsLowAndFallsToZero() {
        var meter = BitrateWindow()
        #expect(meter.bitsPerSecond(now: .seconds(1)) == 0)
        for step in 1...10 {  // 1 Mbit/s for 100 ms
            meter.add(bytes: 1_250, now: .milliseconds(1_000 + 10 * UInt64(step)))
            #expect(meter.bitsPerSecond(now: .milliseconds(1_000 + 10 * UInt64(step))) <= 1_000_000 * UInt64(step) / 95 + 1)
        }
        #expect(meter.bitsPerSecond(now: .milliseconds(1_100)) > 90_000)
        #expect(meter.bitsPerSecond(now: .milliseconds(2_049)) > 0)
        #expect(meter.bitsPerSecond(now: .milliseconds(2_150)) == 0)
    }

    @Test func hostileInputsNeitherTrapNorMislead() {
        var meter = BitrateWindow(window: 0, buckets: 0)
        #expect(meter.window == 1_000_000, "at least 1 ms, in at least 2 buckets")
        meter.add(bytes: -5, now: .seconds(1))
        meter.add(bytes: 0, now: .seconds(1))
        #expect(meter.bitsPerSecond(now: .seconds(1)) == 0)
        for _ in 0..<4 { meter.add(bytes: .max, now: .seconds(1)) }
        #expect(meter.bitsPerSecond(now: .seconds(1)) == .max)

        // Time going backwards: what was written "later" is not counted, nothing traps.
        var backwards = BitrateWindow()
        backwards.add(bytes: 1_000, now: .seconds(10))
        #expect(backwards.bitsPerSecond(now: .seconds(9)) == 0)
        backwards.add(bytes: 1_000, now: .seconds(9))
        #expect(backwards.bitsPerSecond(now: .seconds(9)) > 0)
        #expect(backwards.bitsPerSecond(now: MediaTime(nanoseconds: .max)) == 0)
        var huge = BitrateWindow(window: .max, buckets: 5_000)
        huge.add(bytes: 100, now: MediaTime(nanoseconds: .max))
        #expect(huge.bitsPerSecond(now: MediaTime(nanoseconds: .max)) == 0, "100 bytes over 584 years")
    }
}
