import BenchmarkSupport
import Foundation

// The room's audio tick under a profiler: `TickProfile <participants> <ticks>` sets up
// `AudioTickScenario` (three talkers, the rest silent in DTX), builds the ticks' packets, then
// runs the ticks. `make bench-instructions` (Benchmarks/Instructions/count.sh) runs it under
// callgrind with collection on only inside `AudioTickScenario.run`, and divides by the ticks.
// TICK_LANES=L (environment) spreads the room's per-member work over L lanes, as the server does
// on L cores. Callgrind's toggle counts only the calling thread's share of the lanes; the wall
// and CPU times printed at the end (CPU of every thread) count them all.
let arguments = CommandLine.arguments
// --build-only: set up and build the steps' packets, run none (what count.sh subtracts, since
// callgrind records calls to the allocator outside the measured window too).
let buildOnly = arguments.count == 4 && arguments[3] == "--build-only"
guard arguments.count == 3 || buildOnly, let participants = Int(arguments[1]), participants > 3,
      let count = Int(arguments[2]), count >= 0
else {
    FileHandle.standardError.write(Data("usage: TickProfile PARTICIPANTS TICKS [--build-only]\n".utf8))
    exit(2)
}
do {
    let lanes = ProcessInfo.processInfo.environment["TICK_LANES"].flatMap(Int.init) ?? 1
    let scenario = try AudioTickScenario(participants: participants, lanes: lanes)
    let ticks = scenario.ticks(count: count)
    var sent = 0
    // Wall time and the process's CPU time (every lane's thread) of the ticks, per tick: for
    // comparing builds natively; noisy on a shared machine, so compare interleaved runs.
    let (wallStart, cpuStart) = (DispatchTime.now().uptimeNanoseconds, clock())
    if !buildOnly { for tick in ticks { sent += scenario.run(tick) } }
    let wall = Double(DispatchTime.now().uptimeNanoseconds - wallStart) / 1e3 / Double(max(count, 1))
    let cpu = Double(clock() - cpuStart) / Double(CLOCKS_PER_SEC) * 1e6 / Double(max(count, 1))
    print("\(participants) participants on \(lanes) lane(s): \(count) ticks, \(sent) datagrams sent;"
        + " per tick \(Int(wall)) µs wall, \(Int(cpu)) µs CPU")
} catch {
    FileHandle.standardError.write(Data("setup failed: \(error)\n".utf8))
    exit(1)
}
