import ChorusCore

import AudioMixer

/// One simulated RTP packet on its way to the jitter buffer.
struct SimulatedPacket {
    var index: Int
    var sequenceNumber: UInt16
    var timestamp: UInt32
    var payload: [UInt8]
    var arrival: UInt64
    var marker = false
}

/// A sender of 20 ms packets and a network, on a simulated clock. The payload of packet `i` is
/// `[i & 0xFF, i >> 8, 0xAA]`, so outputs can be traced back to packets.
struct SimulatedSender {
    var firstSequence: UInt16 = 1_000
    var firstTimestamp: UInt32 = 123_456
    /// Nanoseconds between packets at the sender (20 ms ± drift).
    var interval: UInt64 = 20_000_000
    var samplesPerPacket: UInt32 = 960
    var start: UInt64 = 1_000_000_000
    var baseDelay: UInt64 = 30_000_000

    static func payload(_ index: Int) -> [UInt8] {
        [UInt8(truncatingIfNeeded: index), UInt8(truncatingIfNeeded: index >> 8), 0xAA]
    }

    /// Packets `range`, with `jitter(i)` extra nanoseconds of network delay each.
    func packets(_ range: Range<Int>, jitter: (Int) -> UInt64 = { _ in 0 }) -> [SimulatedPacket] {
        range.map { index in
            SimulatedPacket(
                index: index,
                sequenceNumber: firstSequence &+ UInt16(truncatingIfNeeded: index),
                timestamp: firstTimestamp &+ UInt32(truncatingIfNeeded: index) &* samplesPerPacket,
                payload: Self.payload(index),
                arrival: start + UInt64(index) * interval + baseDelay + jitter(index))
        }
    }
}

/// Drives an `AdaptiveJitterBuffer` like a room does: packets are inserted when they arrive,
/// `pop` runs every 20 ms tick, and the outputs are summarized as short strings:
/// `F12` frame of packet 12, `R13` FEC recovery from packet 13, `C` conceal, `S` silence,
/// `D` DTX, `-` not started.
struct JitterSimulation {
    var buffer: AdaptiveJitterBuffer
    var tick: UInt64 = 20_000_000
    /// Ticks run 7 ms out of phase with the sender, as a real timer would be.
    var firstTick: UInt64 = 1_007_000_000
    var outputs: [JitterBufferOutput] = []
    /// Called after every pop, with the tick index.
    var observe: ((Int, AdaptiveJitterBuffer) -> Void)?

    init(configuration: JitterBufferConfiguration = JitterBufferConfiguration()) {
        buffer = AdaptiveJitterBuffer(configuration: configuration)
    }

    mutating func run(_ packets: [SimulatedPacket], ticks: Int) {
        let ordered = packets.enumerated().sorted { ($0.element.arrival, $0.offset) < ($1.element.arrival, $1.offset) }
        var next = 0
        for tickIndex in 0..<ticks {
            let now = firstTick + UInt64(tickIndex) * tick
            while next < ordered.count, ordered[next].element.arrival <= now {
                let packet = ordered[next].element
                buffer.insert(
                    sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp, payload: packet.payload,
                    arrival: MediaTime(nanoseconds: packet.arrival), marker: packet.marker)
                next += 1
            }
            outputs.append(buffer.pop(now: MediaTime(nanoseconds: now)))
            observe?(tickIndex, buffer)
        }
    }

    var summary: [String] { outputs.map(Self.describe) }

    /// The summary without the leading not-started ticks.
    var played: [String] { Array(summary.drop { $0 == "-" }) }

    static func describe(_ output: JitterBufferOutput) -> String {
        switch output {
        case .frame(let payload): return "F\(index(payload))"
        case .recoverWithFEC(let next, _): return "R\(index(next))"
        case .conceal: return "C"
        case .silence: return "S"
        case .dtx: return "D"
        case .notStarted: return "-"
        }
    }

    static func index(_ payload: [UInt8]) -> Int {
        payload.count == 3 ? Int(payload[0]) | Int(payload[1]) << 8 : -1
    }
}

/// `["F0", "F1", …]` for a range of packet indexes.
func frames(_ range: Range<Int>) -> [String] { range.map { "F\($0)" } }
