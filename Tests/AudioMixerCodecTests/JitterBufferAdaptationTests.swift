import ChorusCore
import Testing

import AudioMixer

/// Long simulations: clock drift, jitter that comes and goes, hostile senders.
@Suite("Adaptive jitter buffer: adaptation")
struct JitterBufferAdaptationTests {
    /// What a long run looked like from the outside.
    struct Trace {
        var maxBuffered = 0
        var minDelayMs = Double.infinity
        var maxDelayMs = 0.0
        var statistics = JitterBufferStatistics()
        var played: [String] = []
    }

    /// Ten minutes of a sender whose clock runs `ppm` parts per million fast (+) or slow (−).
    private func drift(ppm: Int) -> Trace {
        var sender = SimulatedSender()
        sender.interval = UInt64(Int64(20_000_000) - Int64(20 * ppm))
        let count = 30_000  // 10 minutes of 20 ms packets
        var trace = Trace()
        var simulation = JitterSimulation()
        simulation.observe = { tick, buffer in
            guard tick > 200 else { return }  // past the start-up
            trace.maxBuffered = max(trace.maxBuffered, buffer.bufferedPackets)
            trace.minDelayMs = min(trace.minDelayMs, buffer.statistics.currentDelayMs)
            trace.maxDelayMs = max(trace.maxDelayMs, buffer.statistics.currentDelayMs)
        }
        simulation.run(sender.packets(0..<count), ticks: count)
        trace.statistics = simulation.buffer.statistics
        print("drift \(ppm) ppm: delay \(trace.minDelayMs)…\(trace.maxDelayMs) ms, max buffered \(trace.maxBuffered), \(trace.statistics)")
        return trace
    }

    @Test("a fast sender clock (+1000 ppm) over 10 minutes: frames dropped, buffer bounded")
    func fastSender() {
        let trace = drift(ppm: 1_000)
        let statistics = trace.statistics
        // 600 s × 1 ms/s = 600 ms of surplus audio = ~30 frames to drop.
        #expect((25...35).contains(statistics.droppedFrames), "\(statistics)")
        #expect(statistics.insertedFrames <= 1)
        #expect(trace.maxBuffered <= 5, "max buffered \(trace.maxBuffered)")
        #expect(trace.maxDelayMs < 75, "max delay \(trace.maxDelayMs)")
        #expect(statistics.lost == 0 && statistics.late == 0)
    }

    @Test("a slow sender clock (−1000 ppm) over 10 minutes: frames inserted, never late")
    func slowSender() {
        let trace = drift(ppm: -1_000)
        let statistics = trace.statistics
        #expect((25...35).contains(statistics.insertedFrames), "\(statistics)")
        #expect(statistics.droppedFrames <= 1)
        #expect(trace.minDelayMs > 5, "min delay \(trace.minDelayMs)")
        #expect(trace.maxBuffered <= 5)
        #expect(statistics.lost == 0 && statistics.late == 0)
    }

    /// Speech (loud throughout: the excess waits for a pause, within two steps of the target)
    /// and quiet audio (the excess is shed at once, to within one step).
    @Test("the target delay grows under jitter and shrinks back when it stops", arguments: [false, true])
    func targetFollowsJitter(quiet: Bool) {
        let sender = SimulatedSender()
        var generator = SplitMix64(seed: 42)
        // 10 s calm, 20 s of 0…80 ms random extra delay, then 90 s calm.
        let jitter = (0..<6_000).map { index in
            (500..<1_500).contains(index) ? UInt64.random(in: 0...80_000_000, using: &generator) : 0
        }
        var targets: [Int: Double] = [:]
        var delays: [Int: Double] = [:]
        var lateDuringJitter = 0
        var simulation = JitterSimulation()
        simulation.buffer.sourceIsQuiet = quiet
        simulation.observe = { tick, buffer in
            targets[tick] = buffer.statistics.currentTargetMs
            delays[tick] = buffer.statistics.currentDelayMs
            if tick == 1_500 { lateDuringJitter = buffer.statistics.late }
        }
        simulation.run(sender.packets(0..<6_000) { jitter[$0] }, ticks: 6_000)
        let calm = targets[490] ?? 0
        let jittery = targets[1_500] ?? 0
        let after = targets[5_990] ?? 0
        print("target: calm \(calm) ms, after 20 s of jitter \(jittery) ms, 90 s later \(after) ms; delay \(delays[1_500] ?? 0) → \(delays[5_990] ?? 0) ms; late \(lateDuringJitter) of 1000")
        #expect(calm <= 25)
        #expect(jittery >= 70)
        #expect((delays[1_500] ?? 0) >= 60, "the delay follows the target")
        #expect(after <= 25)
        // Back within two steps (20 ms each) of the target in speech, one in quiet audio.
        #expect((delays[5_990] ?? 0) <= after + (quiet ? 20 : 40), "and comes back down")
        // Late loss is bounded to the adaptation period (the target is a 95 % quantile).
        #expect(lateDuringJitter < 100)
    }

    @Test("hostile input never traps and never grows the buffer beyond its capacity")
    func hostileInput() {
        var generator = SplitMix64(seed: 1)
        var buffer = AdaptiveJitterBuffer()
        var now: UInt64 = 5_000_000_000
        for round in 0..<50_000 {
            let payload = [UInt8](repeating: 1, count: Int.random(in: 0...40, using: &generator))
            // Arrival times jitter backwards too: a clock the buffer must not trust blindly.
            let arrival = now &- UInt64.random(in: 0...50_000_000, using: &generator)
            buffer.insert(
                sequenceNumber: UInt16.random(in: 0...UInt16.max, using: &generator),
                timestamp: UInt32.random(in: 0...UInt32.max, using: &generator),
                payload: payload, arrival: MediaTime(nanoseconds: arrival),
                marker: Bool.random(using: &generator),
                samples: round % 3 == 0 ? Int.random(in: -10...100_000, using: &generator) : nil)
            if round % 3 == 0 { _ = buffer.pop(now: MediaTime(nanoseconds: now)) }
            #expect(buffer.bufferedPackets <= 128)
            now += UInt64.random(in: 0...20_000_000, using: &generator)
        }
        _ = buffer.pop(now: MediaTime(nanoseconds: 0))
        _ = buffer.pop(now: MediaTime(nanoseconds: .max))
        #expect(buffer.statistics.packetsReceived == 50_000)
    }
}
