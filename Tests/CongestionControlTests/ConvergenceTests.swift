import ChorusCore
import CongestionControl
import Testing

/// The estimator in a simulated call (`SimulatedCall`: a sender at the target rate with probes,
/// a bottleneck queue, feedback every 100 ms encoded to bytes and parsed back), on traces with
/// known answers. Seeded and on a simulated clock: each run gives the same numbers every time.
/// Every run crosses the transport-wide sequence number wrap and the 24-bit reference time wrap.
/// The measured figures are printed; the bounds asserted leave some room above them.
@Suite("Send-side estimator on a simulated bottleneck: step-down, step-up, random loss, ramp-up")
struct ConvergenceTests {
    /// 2 → 0.5 Mbit/s at 20 s, with a 300 ms drop-tail buffer and with a 5 s one (where only
    /// delay, not loss, can tell). Measured: under 550 kbit/s 1.1 s after the step in both.
    @Test(arguments: [UInt64(300), 5_000])
    func stepDown(bufferMilliseconds: UInt64) {
        var scenario = CallScenario()
        scenario.duration = 40
        scenario.maximumQueueDelayMilliseconds = bufferMilliseconds
        scenario.capacity = { $0 < 20 ? 2_000_000 : 500_000 }
        let trace = SimulatedCall.run(scenario)
        let before = trace.targets(from: 10, to: 20)
        #expect(before.allSatisfy { (1_500_000...2_200_000).contains($0) }, "\(before.min() ?? 0)…\(before.max() ?? 0)")
        let reaction = trace.firstTime(after: 20) { $0 < 550_000 }.map { $0 - 20 } ?? .infinity
        let settled = trace.targets(from: 25, to: 40)
        print("step-down 2 → 0.5 Mbit/s, buffer \(bufferMilliseconds) ms: < 550 kbit/s after \(reaction) s;",
              "25–40 s \(settled.min() ?? 0)…\(settled.max() ?? 0) bit/s")
        #expect(reaction <= 2)
        #expect(settled.allSatisfy { (300_000...600_000).contains($0) }, "\(settled.min() ?? 0)…\(settled.max() ?? 0)")
    }

    /// 0.5 → 2 Mbit/s at 20 s. Measured: ≥ 1.6 Mbit/s 3.8 s after the step with periodic probing
    /// (the first probe 5 s after the last back-off, then exponential), 19.4 s with AIMD alone.
    @Test func stepUp() {
        var scenario = CallScenario()
        scenario.duration = 40
        scenario.capacity = { $0 < 20 ? 500_000 : 2_000_000 }
        let trace = SimulatedCall.run(scenario)
        let before = trace.targets(from: 10, to: 20)
        #expect(before.allSatisfy { (300_000...600_000).contains($0) }, "\(before.min() ?? 0)…\(before.max() ?? 0)")
        let reached = trace.firstTime(after: 20) { $0 >= 1_600_000 } ?? .infinity
        let after = trace.targets(from: reached + 1, to: 40)
        scenario.configuration.periodicProbeIntervalNanoseconds = nil
        let withoutProbes = SimulatedCall.run(scenario).firstTime(after: 20) { $0 >= 1_600_000 } ?? .infinity
        print("step-up 0.5 → 2 Mbit/s: ≥ 1.6 Mbit/s after \(reached - 20) s (\(withoutProbes - 20) s without",
              "periodic probes); then \(after.min() ?? 0)…\(after.max() ?? 0) bit/s")
        #expect(reached - 20 <= 5)
        #expect(withoutProbes - 20 > 10, "probing is what makes it fast")
        #expect(!after.isEmpty && after.allSatisfy { (1_200_000...2_200_000).contains($0) })
    }

    /// 1 Mbit/s with 5 % random loss, four seeds, 60 s each. Measured after 10 s: means 0.89–0.95
    /// of the capacity, every target within −25 %…+20 % of its run's mean; the queue under 25 ms.
    @Test(arguments: [UInt64(1), 2, 3, 4])
    func randomLoss(seed: UInt64) {
        var scenario = CallScenario()
        scenario.duration = 60
        scenario.lossRate = 0.05
        scenario.seed = seed
        let trace = SimulatedCall.run(scenario)
        let targets = trace.targets(from: 10, to: 60)
        let mean = targets.reduce(0, +) / Double(max(targets.count, 1))
        let low = (targets.min() ?? 0) / mean - 1
        let high = (targets.max() ?? 0) / mean - 1
        let losses = trace.samples.filter { $0.time >= 10 }.map(\.estimate.lossFraction)
        let meanLoss = losses.reduce(0, +) / Double(max(losses.count, 1))
        print("1 Mbit/s, 5 % loss, seed \(seed): mean \(Int(mean)) bit/s, band \(Int(low * 100))…+\(Int(high * 100)) %,",
              "loss seen \(meanLoss), queue ≤ \(trace.maximumQueueDelay) ms")
        #expect((800_000...1_000_000).contains(mean))
        #expect(low >= -0.3 && high <= 0.3)
        #expect((0.03...0.07).contains(meanLoss))
        #expect(trace.maximumQueueDelay < 100)
    }

    /// 2.5 Mbit/s from a 300 kbit/s start. Measured: ≥ 2 Mbit/s 0.23 s in (probes at 0.9, 1.8
    /// and 3.6 Mbit/s), 24.8 s without probing (AIMD's 8 %/s); the target stays under 1.1 × the
    /// capacity.
    @Test func rampUpWithProbes() {
        var scenario = CallScenario()
        scenario.duration = 10
        scenario.capacity = { _ in 2_500_000 }
        let trace = SimulatedCall.run(scenario)
        let reached = trace.firstTime(after: 0) { $0 >= 2_000_000 } ?? .infinity
        scenario.configuration.initialProbing = false
        scenario.configuration.periodicProbeIntervalNanoseconds = nil
        scenario.duration = 40
        let slow = SimulatedCall.run(scenario).firstTime(after: 0) { $0 >= 2_000_000 } ?? .infinity
        print("ramp-up to 2.5 Mbit/s: ≥ 2 Mbit/s after \(reached) s with probes, \(slow) s without;",
              "probes \(trace.probeClusters.map(\.targetBitrate))")
        #expect(reached <= 0.5)
        #expect(slow > 10)
        #expect(Array(trace.probeClusters.prefix(2).map(\.targetBitrate)) == [900_000, 1_800_000])
        #expect(trace.statistics.probeResults >= 2)
        #expect(trace.targets(from: 0, to: 10).allSatisfy { $0 <= 2_750_000 })
        #expect(trace.statistics.unknownPacketReports == 0 && trace.statistics.arrivalClockResets == 0)
    }
}
