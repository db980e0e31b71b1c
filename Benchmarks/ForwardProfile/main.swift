import BenchmarkSupport
import Foundation

// The room forward path under a profiler: `ForwardProfile <plain|simulcast+transport-cc> <packets>`
// sets up `RoomForwardScenario` (10 viewers), builds the packets, then forwards them.
// `make bench-instructions` (Benchmarks/Instructions/count.sh) runs it under callgrind with
// collection on only inside `RoomForwardScenario.forward`, and divides by the packets.
let arguments = CommandLine.arguments
// --build-only: set up and build the steps' packets, run none (what count.sh subtracts, since
// callgrind records calls to the allocator outside the measured window too).
let buildOnly = arguments.count == 4 && arguments[3] == "--build-only"
guard arguments.count == 3 || buildOnly, let kind = RoomForwardScenario.Kind(rawValue: arguments[1]),
      let count = Int(arguments[2]), count >= 0
else {
    let usage = "usage: ForwardProfile plain|simulcast+transport-cc PACKETS [--build-only]\n"
    FileHandle.standardError.write(Data(usage.utf8))
    exit(2)
}
do {
    let scenario = try RoomForwardScenario(kind: kind)
    let packets = scenario.packets(count: count)
    var sent = 0
    if !buildOnly { for packet in packets { sent += scenario.forward(packet) } }
    print("\(kind.rawValue): \(count) packets, \(sent) datagrams to \(scenario.subscribers) viewers")
} catch {
    FileHandle.standardError.write(Data("setup failed: \(error)\n".utf8))
    exit(1)
}
