import ChorusCore
import Testing

@testable import Rooms

/// The pacer on its own, on a given clock: a burst goes out no faster than its rate, in order,
/// with at most a tick's worth at once; nothing is paced without a measured budget; its queue is
/// bounded; a retransmission spends its credit.
@Suite("VideoPacer on a simulated clock")
struct VideoPacerTests {
    static let start = MediaTime.seconds(10)

    /// A 30 KB keyframe (25 packets of 1,200 bytes) to a subscriber whose video budget is
    /// 244 kbit/s (a 300 kbit/s link less the audio): paced at 305 kbit/s, it leaves over about
    /// 0.8 s, never more than a tick's credit plus one packet ahead of the rate, all of it, in
    /// order.
    @Test func aKeyframeLeavesNoFasterThanTheRate() {
        var pacer = VideoPacer()
        let waiting = pacer.setBudget(244_000, now: Self.start)
        #expect(waiting.isEmpty)
        var sent: [(at: MediaTime, packet: [UInt8])] = []
        var now = Self.start.adding(milliseconds: 20)  // a tick of credit
        for index in 0..<25 {
            let packet = [UInt8](repeating: UInt8(index), count: 1_200)
            sent += pacer.release(now: now).map { (now, $0) }
            if pacer.admit(bytes: packet.count, now: now) { sent.append((now, packet)) } else { pacer.enqueue(packet) }
        }
        while !pacer.isEmpty {
            now = now.adding(milliseconds: 20)
            sent += pacer.release(now: now).map { (now, $0) }
        }
        #expect(sent.map { $0.packet[0] } == (0..<25).map(UInt8.init), "out of order or lost")
        let rateBytes = 305_000.0 / 8
        for (index, item) in sent.enumerated() {
            let allowed = rateBytes * (Double(item.at.nanoseconds(since: Self.start)) / 1e9) + 1_200
            #expect(Double((index + 1) * 1_200) <= allowed + rateBytes * 0.02, "packet \(index) early")
        }
        let took = Double(now.nanoseconds(since: Self.start)) / 1e9
        #expect(took > 0.7 && took < 1.0, "\(took) s")
        #expect(pacer.dropped == 0)
    }

    /// Without a measured budget (a REMB-only subscriber) every packet goes at once; losing the
    /// budget hands back what waited.
    @Test func withoutABudgetNothingWaits() {
        var pacer = VideoPacer()
        for _ in 0..<10 {
            let admitted = pacer.admit(bytes: 1_200, now: Self.start)
            #expect(admitted)
        }
        _ = pacer.setBudget(100_000, now: Self.start)
        var queued = 0
        for index in 0..<10 where !pacer.admit(bytes: 1_200, now: Self.start) {
            pacer.enqueue([UInt8(index)])
            queued += 1
        }
        #expect(queued == 10, "nothing had credit at the first instant")
        let handedBack = pacer.setBudget(nil, now: Self.start)
        #expect(handedBack.count == 10 && pacer.isEmpty)
    }

    /// The queue holds two seconds at the rate; older packets go first, counted.
    @Test func theQueueIsBounded() {
        var pacer = VideoPacer()
        _ = pacer.setBudget(80_000, now: Self.start)  // paced at 100 kbit/s: 25,000 bytes in 2 s
        for index in 0..<40 { pacer.enqueue([UInt8](repeating: UInt8(index), count: 1_000)) }
        #expect(pacer.dropped == 15)
        let first = pacer.release(now: Self.start.adding(milliseconds: 20)).first
        #expect(first?.first == 15, "the oldest were not the ones dropped")
    }

    /// A retransmission goes at once but spends the credit: the next packet waits.
    @Test func aRetransmissionSpendsTheCredit() {
        var pacer = VideoPacer()
        _ = pacer.setBudget(400_000, now: Self.start)
        let now = Self.start.adding(milliseconds: 20)  // 1,250 bytes of credit
        pacer.spend(bytes: 1_200, now: now)
        let first = pacer.admit(bytes: 100, now: now), second = pacer.admit(bytes: 100, now: now)
        #expect(first && !second)
    }
}
