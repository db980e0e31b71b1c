import ChorusCore
import Testing

@testable import Rooms

/// The quality monitor on its own: members' seconds judged from the samples the test gives
/// (what the room core builds from the other stages), warnings raised and recovered as events,
/// and the room's own load from its late ticks.
@Suite("QualityMonitor on a simulated clock")
struct QualityMonitorTests {
    static let ann = CallID(guid: "00000000-0000-4000-8000-0000000000a1")
    static let bob = CallID(guid: "00000000-0000-4000-8000-0000000000b1")

    /// Runs `seconds` of 20 ms ticks; `sample` gives each member's second.
    static func run(_ monitor: inout QualityMonitor, seconds: Int, from now: inout MediaTime, output: inout RoomOutput,
                    dueTicks: Int = 1, sample: (CallID, Int) -> CallQuality.Sample?) {
        for tick in 0..<(seconds * 50) {
            now = now.adding(milliseconds: 20)
            monitor.noteDueTicks(dueTicks)
            monitor.tick(now: now, stripes: nil, sample: { sample($0, tick) }, into: &output)
        }
    }

    static func sample(received: Int, lost: Int) -> CallQuality.Sample {
        CallQuality.Sample(packetsReceived: received, packetsLost: lost, jitterMs: 5, roundTripMs: 50,
                           jitterBufferDelayMs: 40, secondsSinceAudio: 0.02, expectsAudio: true, secondsSinceVideo: nil)
    }

    /// Ann's uplink loses 10 % for 3 s, then nothing: one warning for her, recovered after
    /// three clean seconds; Bob, established and clean, is never warned; nobody is judged
    /// before being established.
    @Test func aLossyMemberIsWarnedAndRecovers() throws {
        var monitor = QualityMonitor()
        monitor.add(Self.ann, userId: try UserID(validating: "ann"))
        monitor.add(Self.bob, userId: try UserID(validating: "bob"))
        monitor.setEstablished(Self.ann)
        monitor.setEstablished(Self.bob)
        var now = MediaTime.seconds(50), output = RoomOutput()
        Self.run(&monitor, seconds: 10, from: &now, output: &output) { callId, tick in
            let packets = tick / 50 * 50
            let lost = callId == Self.ann ? min(tick, 150) / 50 * 5 : 0
            return Self.sample(received: packets, lost: lost)
        }
        let warnings = output.events.compactMap { if case .callQualityWarning(let w) = $0.event { w } else { nil } }
        let recoveries = output.events.compactMap { if case .callQualityRecovered(let r) = $0.event { r } else { nil } }
        #expect(warnings.map(\.member?.callId) == [Self.ann])
        #expect(warnings.first?.warning == "highPacketLoss" && warnings.first?.direction == "uplink")
        #expect(recoveries.map(\.member?.callId) == [Self.ann])
        #expect(monitor.summary(of: Self.ann)?.warnings["highPacketLoss"]?.count == 1)
        #expect(monitor.summary(of: Self.bob)?.warnings.isEmpty == true)
        #expect(monitor.secondsJudged(Self.ann) == 9)
    }

    /// A room whose firings come late (three grid ticks each) is overloaded, as a room-wide
    /// warning; it recovers once its ticks come on time again.
    @Test func aRoomFallingBehindIsWarnedAbout() throws {
        var monitor = QualityMonitor()
        var now = MediaTime.seconds(50), output = RoomOutput()
        Self.run(&monitor, seconds: 4, from: &now, output: &output, dueTicks: 3) { _, _ in nil }
        Self.run(&monitor, seconds: 6, from: &now, output: &output) { _, _ in nil }
        let warnings = output.events.compactMap { if case .callQualityWarning(let w) = $0.event { w } else { nil } }
        let recoveries = output.events.compactMap { if case .callQualityRecovered(let r) = $0.event { r } else { nil } }
        #expect(warnings.count == 1 && warnings.first?.warning == "overloadedRoom" && warnings.first?.member == nil)
        #expect((warnings.first?.value ?? 0) >= RoomLoad.triggerPercent)
        #expect(recoveries.count == 1 && recoveries.first?.warning == "overloadedRoom")
    }
}
