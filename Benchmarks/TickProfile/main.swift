import BenchmarkSupport
import Foundation

// The room's audio tick under a profiler: `TickProfile <participants> <ticks>` sets up
// `AudioTickScenario` (three talkers, the rest silent in DTX), builds the ticks' packets, then
// runs the ticks. `make bench-instructions` (Benchmarks/Instructions/count.sh) runs it under
// callgrind with collection on only inside `AudioTickScenario.run`, and divides by the ticks.
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
    let scenario = try AudioTickScenario(participants: participants)
    let ticks = scenario.ticks(count: count)
    var sent = 0
    if !buildOnly { for tick in ticks { sent += scenario.run(tick) } }
    print("\(participants) participants: \(count) ticks, \(sent) datagrams sent")
} catch {
    FileHandle.standardError.write(Data("setup failed: \(error)\n".utf8))
    exit(1)
}
