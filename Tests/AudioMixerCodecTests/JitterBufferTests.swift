import ChorusCore
import Testing

import AudioMixer

/// Table tests of `AdaptiveJitterBuffer` on a simulated clock (see `JitterSimulation`): a
/// 20 ms sender 30 ms away, ticks 7 ms out of phase, initial target 40 ms.
@Suite("Adaptive jitter buffer")
struct JitterBufferTests {
    let sender = SimulatedSender()

    /// A network event applied to a clean 20 ms stream of `count` packets.
    struct Scenario: CustomTestStringConvertible, Sendable {
        var name: String
        var count = 40
        var fec = true
        var lose: Set<Int> = []
        var delay: [Int: UInt64] = [:]
        var duplicate: [Int: UInt64] = [:]
        /// What playout must start with (after the not-started ticks).
        var expected: [String]
        var lost = 0, late = 0, duplicates = 0, fecRecoveries = 0, concealed = 0
        var testDescription: String { name }
    }

    static let scenarios: [Scenario] = [
        Scenario(name: "in order", expected: frames(0..<40)),
        Scenario(
            name: "reordered: packet 10 overtaken by 11, 25 by 26 and 27",
            delay: [10: 25_000_000, 25: 45_000_000], expected: frames(0..<40)),
        Scenario(
            name: "duplicates, one in the buffer and one already played",
            duplicate: [5: 1_000_000, 3: 200_000_000], expected: frames(0..<40), duplicates: 2),
        Scenario(
            name: "late: packet 30 arrives after its playout time",
            delay: [30: 150_000_000], expected: frames(0..<30) + ["R31"] + frames(31..<40),
            lost: 1, late: 1, fecRecoveries: 1),
        Scenario(
            name: "lost, recovered from the next packet's FEC",
            lose: [20], expected: frames(0..<20) + ["R21"] + frames(21..<40), lost: 1, fecRecoveries: 1),
        Scenario(
            name: "lost, no FEC: concealed", fec: false,
            lose: [20], expected: frames(0..<20) + ["C"] + frames(21..<40), lost: 1, concealed: 1),
        Scenario(
            name: "burst of three lost: concealed, concealed, FEC for the last",
            lose: [20, 21, 22], expected: frames(0..<20) + ["C", "C", "R23"] + frames(23..<40),
            lost: 3, fecRecoveries: 1, concealed: 2),
    ]

    @Test("network events", arguments: scenarios)
    func scenario(_ scenario: Scenario) {
        var configuration = JitterBufferConfiguration()
        configuration.inbandFEC = scenario.fec
        var simulation = JitterSimulation(configuration: configuration)
        var packets = sender.packets(0..<scenario.count) { UInt64(scenario.delay[$0] ?? 0) }
        for (index, extra) in scenario.duplicate {
            var copy = packets[index]
            copy.arrival += extra
            packets.append(copy)
        }
        packets.removeAll { scenario.lose.contains($0.index) && $0.arrival < UInt64.max }
        // Four ticks before the target delay has built up, then one output per packet.
        simulation.run(packets, ticks: 4 + scenario.count)
        #expect(simulation.played == scenario.expected)
        let statistics = simulation.buffer.statistics
        #expect(statistics.lost == scenario.lost)
        #expect(statistics.late == scenario.late)
        #expect(statistics.duplicates == scenario.duplicates)
        #expect(statistics.discarded == scenario.duplicates)
        #expect(statistics.fecRecoveries == scenario.fecRecoveries)
        #expect(statistics.concealedFrames == scenario.concealed)
        #expect(statistics.packetsReceived == packets.count)
    }

    @Test("not started until the target delay has built up")
    func startsAfterTargetDelay() {
        var simulation = JitterSimulation()
        simulation.run(sender.packets(0..<10), ticks: 8)
        // First packet arrives at 1.030 s; 40 ms target → first tick at or after 1.070 s (1.087).
        #expect(simulation.summary.prefix(5) == ["-", "-", "-", "-", "F0"])
        #expect(simulation.buffer.statistics.meanDelayMs > 40)
    }

    @Test("an outage: a few concealed frames, then silence, then playout resumes")
    func outageGoesSilentThenResumes() {
        var simulation = JitterSimulation()
        let packets = sender.packets(0..<60).filter { !(20..<40).contains($0.index) }
        simulation.run(packets, ticks: 80)
        let played = simulation.played
        #expect(Array(played.prefix(25)) == frames(0..<20) + ["C", "C", "C", "C", "C"])
        let resumed = played.firstIndex(of: "F40") ?? played.count
        #expect(played[25..<resumed].allSatisfy { $0 == "S" } && resumed - 25 > 10)
        #expect(Array(played[resumed...].prefix(20)) == frames(40..<60))
        #expect(simulation.buffer.statistics.lost == 20)
    }

    @Test("DTX: a DTX frame, then a timestamp gap, is silence and never concealment")
    func dtxGap() {
        var simulation = JitterSimulation()
        var packets = sender.packets(0..<21)
        packets[20].payload = [0xF8]  // a 1-byte Opus DTX frame
        // After one second of silence the talkspurt resumes: next sequence number, marker bit,
        // timestamp and send time 50 packets later.
        var resumed = sender.packets(71..<90)
        for index in resumed.indices {
            resumed[index].sequenceNumber = sender.firstSequence &+ UInt16(21 + index)
        }
        resumed[0].marker = true
        // 4 not-started ticks, 21 packets, 50 ticks of silence, 19 packets: stop at the last one.
        simulation.run(packets + resumed, ticks: 94)
        let played = simulation.played
        #expect(played.last == "F89")
        #expect(Array(played.prefix(21)) == frames(0..<20) + ["F-1"])
        let restart = played.firstIndex(of: "F71") ?? played.count
        #expect(played[21..<restart].allSatisfy { $0 == "D" } && restart - 21 > 40)
        #expect(Array(played[restart...].prefix(19)) == frames(71..<90))
        let statistics = simulation.buffer.statistics
        #expect(statistics.lost == 0 && statistics.concealedFrames == 0 && statistics.late == 0)
    }

    @Test("DTX: a timestamp gap between consecutive packets is played as silence")
    func timestampGapWithinBuffer() {
        var simulation = JitterSimulation()
        var packets = sender.packets(0..<30)
        // The sender skipped one frame of its timeline between packets 14 and 15.
        for index in 15..<30 {
            packets[index].timestamp &+= 960
            packets[index].arrival += 20_000_000
        }
        simulation.run(packets, ticks: 40)
        #expect(Array(simulation.played.prefix(31)) == frames(0..<15) + ["D"] + frames(15..<30))
        #expect(simulation.buffer.statistics.lost == 0)
    }

    @Test("sequence numbers and timestamps wrap without a hiccup")
    func wraparound() {
        var simulation = JitterSimulation()
        var wrapping = sender
        wrapping.firstSequence = 65_500
        wrapping.firstTimestamp = UInt32.max - 960 * 10
        simulation.run(wrapping.packets(0..<100), ticks: 105)
        #expect(Array(simulation.played.prefix(100)) == frames(0..<100))
        #expect(simulation.buffer.statistics.lost == 0)
    }

    @Test("a sender that restarts its sequence numbers is followed after a resynchronization")
    func senderRestart() {
        var simulation = JitterSimulation()
        var packets = sender.packets(0..<100)
        for index in 50..<100 { packets[index].sequenceNumber &-= 5_000 }
        simulation.run(packets, ticks: 110)
        let statistics = simulation.buffer.statistics
        #expect(statistics.resyncs == 1)
        #expect(simulation.played.contains("F70") && simulation.played.contains("F99"))
    }
}
