import BenchmarkSupport
import Foundation

// The room forward path under a profiler: `ForwardProfile <plain|simulcast+transport-cc> <packets>`
// sets up `RoomForwardScenario` (10 viewers), builds the packets, then forwards them.
// `make bench-instructions` (Benchmarks/Instructions/count.sh) runs it under callgrind with
// collection on only inside `RoomForwardScenario.forward`, and divides by the packets.
let arguments = CommandLine.arguments
guard arguments.count == 3, let kind = RoomForwardScenario.Kind(rawValue: arguments[1]), let count = Int(arguments[2]),
      count >= 0
else {
    FileHandle.standardError.write(Data("usage: ForwardProfile plain|simulcast+transport-cc PACKETS\n".utf8))
    exit(2)
}
do {
    let scenario = try RoomForwardScenario(kind: kind)
    let packets = scenario.packets(count: count)
    var sent = 0
    for packet in packets { sent += scenario.forward(packet) }
    print("\(kind.rawValue): \(count) packets, \(sent) datagrams to \(scenario.subscribers) viewers")
} catch {
    FileHandle.standardError.write(Data("setup failed: \(error)\n".utf8))
    exit(1)
}
