import BenchmarkSupport
import Foundation

// The room forward path under a profiler: `ForwardProfile <plain|simulcast+transport-cc> <packets> [build-only]`
// sets up `RoomForwardScenario` (10 viewers), builds the packets, then forwards them. Under
// callgrind, the instructions of N packets minus those of 0 packets, divided by N, are the
// forward path's per packet (docs/PERFORMANCE.md, "Simulcast and transport-cc on the forward path").
let arguments = CommandLine.arguments
guard arguments.count == 3 || arguments.count == 4 && arguments[3] == "build-only",
      let kind = RoomForwardScenario.Kind(rawValue: arguments[1]), let count = Int(arguments[2]),
      count >= 0
else {
    FileHandle.standardError.write(Data("usage: ForwardProfile plain|simulcast+transport-cc PACKETS [build-only]\n".utf8))
    exit(2)
}
do {
    let scenario = try RoomForwardScenario(kind: kind)
    let packets = scenario.packets(count: count)
    var sent = 0
    // "build-only": the same packets built, none forwarded (what to subtract from a count).
    if arguments.count == 3 { for packet in packets { sent += scenario.forward(packet) } }
    print("\(kind.rawValue): \(count) packets, \(sent) datagrams to \(scenario.subscribers) viewers")
} catch {
    FileHandle.standardError.write(Data("setup failed: \(error)\n".utf8))
    exit(1)
}
