import ChorusCore
import RTCP
import Testing

@testable import PeerTransport

/// The receive side of transport-cc: what arrived is reported once, every 100 ms, in order,
/// and no peer can make it report more than its window or remember more than its ring.
@Suite("Transport-cc feedback recorder")
struct TransportFeedbackRecorderTests {
    static func at(_ ms: UInt64) -> MediaTime { .milliseconds(ms) }

    func reported(_ messages: [[UInt8]]) throws -> [TransportFeedback.PacketResult] {
        try messages.flatMap { Array(try TransportFeedback(parsing: $0).packets) }
    }

    @Test func reportsEveryArrivalOnceAtTheInterval() throws {
        var recorder = TransportFeedbackRecorder()
        for (index, sequence) in [65_534, 65_535, 0, 2, 1].enumerated() {
            recorder.record(UInt16(sequence), at: Self.at(1_000 + UInt64(index) * 10))
        }
        let early = recorder.feedback(senderSSRC: SSRC(1), mediaSSRC: SSRC(2), now: Self.at(1_050))
        #expect(early.isEmpty)
        let messages = recorder.feedback(senderSSRC: SSRC(1), mediaSSRC: SSRC(2), now: Self.at(1_100))
        let results = try reported(messages)
        // Across the wrap, in sequence order; 1 arrived after 2 and still counts.
        #expect(results.map(\.sequenceNumber) == [65_534, 65_535, 0, 1, 2])
        #expect(results.allSatisfy { $0.isReceived })
        let arrivals = results.compactMap(\.arrivalTimeMicroseconds)
        #expect(arrivals == [1_000_000, 1_010_000, 1_020_000, 1_040_000, 1_030_000])
        // Nothing new, nothing sent; a late packet is counted, not reported.
        let idle = recorder.feedback(senderSSRC: SSRC(1), mediaSSRC: SSRC(2), now: Self.at(1_200))
        #expect(idle.isEmpty)
        recorder.record(65_535, at: Self.at(1_210))
        recorder.record(3, at: Self.at(1_220))
        recorder.record(3, at: Self.at(1_221))
        #expect(recorder.lateOrRepeated == 2)
        let next = try reported(recorder.feedback(senderSSRC: SSRC(1), mediaSSRC: SSRC(2), now: Self.at(1_300)))
        #expect(next.map(\.sequenceNumber) == [3] && next.first?.arrivalTimeMicroseconds == 1_220_000)
        #expect(recorder.messagesSent == 2)
    }

    @Test func consecutiveMessagesCountUpAndManyArrivalsSplit() throws {
        var recorder = TransportFeedbackRecorder()
        for sequence in 0..<600 { recorder.record(UInt16(sequence), at: .microseconds(UInt64(sequence) * 100)) }
        let messages = recorder.feedback(senderSSRC: SSRC(1), mediaSSRC: SSRC(2), now: Self.at(200))
        #expect(messages.count == 3)  // 250 received packets per message at most
        let parsed = try messages.map { try TransportFeedback(parsing: $0) }
        #expect(parsed.map(\.feedbackPacketCount) == [0, 1, 2])
        #expect(try reported(messages).map(\.sequenceNumber) == (0..<600).map { UInt16($0) })
    }

    /// A packet lost right after a feedback went out is reported lost in the next one (the
    /// message starts at the first number not yet reported, as libwebrtc's receiver does), and
    /// so is one lost between two messages of one round.
    @Test func aLossRightAfterAFeedbackIsReported() throws {
        var recorder = TransportFeedbackRecorder()
        recorder.record(0, at: Self.at(0))
        recorder.record(1, at: Self.at(20))
        #expect(try reported(recorder.feedback(senderSSRC: SSRC(1), mediaSSRC: SSRC(2), now: Self.at(100))).count == 2)
        // 2 is lost; 3 and 4 arrive.
        recorder.record(3, at: Self.at(120))
        recorder.record(4, at: Self.at(140))
        let next = try reported(recorder.feedback(senderSSRC: SSRC(1), mediaSSRC: SSRC(2), now: Self.at(200)))
        #expect(next.map(\.sequenceNumber) == [2, 3, 4])
        #expect(next.map(\.isReceived) == [false, true, true])
        // 600 packets with every 100th lost: three messages, and the losses at their seams too.
        for sequence in 5..<605 where sequence % 100 != 0 {
            recorder.record(UInt16(sequence), at: .microseconds(200_000 + UInt64(sequence) * 100))
        }
        let many = try reported(recorder.feedback(senderSSRC: SSRC(1), mediaSSRC: SSRC(2), now: Self.at(400)))
        #expect(many.map(\.sequenceNumber) == (5..<605).map { UInt16($0) })
        #expect(many.filter { !$0.isReceived }.map(\.sequenceNumber) == [100, 200, 300, 400, 500, 600])
    }

    /// A peer that jumps its sequence numbers far ahead cannot make a report longer than the
    /// ring: what fell out is not reported.
    @Test func aJumpAheadReportsAtMostTheWindow() throws {
        var recorder = TransportFeedbackRecorder()
        recorder.record(10, at: Self.at(0))
        recorder.record(30_010, at: Self.at(1))
        recorder.record(30_011, at: Self.at(2))
        let results = try reported(recorder.feedback(senderSSRC: SSRC(1), mediaSSRC: SSRC(2), now: Self.at(100)))
        #expect(results.count <= TransportFeedbackRecorder.window)
        #expect(results.last?.sequenceNumber == 30_011)
        #expect(results.filter(\.isReceived).map(\.sequenceNumber) == [30_010, 30_011])
    }
}

extension MediaTime {
    static func microseconds(_ us: UInt64) -> MediaTime { MediaTime(nanoseconds: us * 1_000) }
}
