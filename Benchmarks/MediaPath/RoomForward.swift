import Benchmark
import BenchmarkSupport

/// The whole forward path of one publisher packet through a room core to 10 viewers
/// (`RoomForwardScenario`): unprotect, parse, layer, cache, per viewer the slot rewrite, the
/// transport-wide stamp (with transport-cc) and the protect into a transmit. Without simulcast
/// and transport-cc (aiortc's offers) and with both (Chromium's). Divide by 10 for a forwarded
/// packet; the packets are built and protected before the measurement starts. The goal is no
/// allocation per forwarded packet beyond the datagram each viewer's transmit owns.
func roomForwardBenchmarks() {
    for kind in RoomForwardScenario.Kind.allCases {
        // Built on first use and kept across samples (the SRTP replay windows move on).
        let holder = ScenarioHolder()
        Benchmark("Room video forward, 1 packet to 10 viewers, \(kind.rawValue)",
                  configuration: .init(metrics: [.wallClock, .mallocCountTotal], scalingFactor: .kilo))
        { benchmark in
            guard let scenario = holder.scenario(kind) else { return }
            let packets = scenario.packets(count: benchmark.scaledIterations.count)
            benchmark.startMeasurement()
            for packet in packets { blackHole(scenario.forward(packet)) }
            benchmark.stopMeasurement()
        }
    }
}

/// One scenario per benchmark, made when the benchmark first runs (not when it is registered).
/// `@unchecked Sendable`: the harness runs a benchmark's samples one after another on one
/// thread, the only one that touches it.
final class ScenarioHolder: @unchecked Sendable {
    private var made: RoomForwardScenario?

    func scenario(_ kind: RoomForwardScenario.Kind) -> RoomForwardScenario? {
        if made == nil { made = try? RoomForwardScenario(kind: kind) }
        return made
    }
}
