import ChorusCore
import RTCP
import Testing

@Suite("Transport-wide congestion control feedback (draft-holmer-…-01 §3.1)")
struct TransportFeedbackTests {
    /// The statuses of the vector, from an independent Python decoder: 0 not received,
    /// 1 small delta, 2 large delta, 3 received without delta.
    static let expectedStatuses: [UInt8] =
        [0, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0]  // 0x9F1C, draft §3.1.4 example 1
        + [0, 3, 1, 1, 1, 0, 0]  // 0xCD50, draft §3.1.4 example 2
        + [2, 2]  // 0x4002
        + Array(repeating: 0, count: 221)  // 0x00DD, draft §3.1.3 example 1

    @Test(arguments: [RTCPVectors.transportFeedback, RTCPVectors.transportFeedbackZeroPadded])
    func parsesTheHeaderFields(_ bytes: [UInt8]) throws {
        let feedback = try TransportFeedback(parsing: bytes)
        #expect(feedback.senderSSRC == SSRC(1))
        #expect(feedback.mediaSSRC == SSRC(0xCAFE_BABE))
        #expect(feedback.baseSequenceNumber == 65_530)
        #expect(feedback.packetStatusCount == 244)
        #expect(feedback.referenceTime == -2)
        #expect(feedback.referenceTimeMicroseconds == -128_000)
        #expect(feedback.feedbackPacketCount == 5)
        let results = Array(feedback.packets)
        #expect(results.count == 244)
        #expect(results.map(\.status.rawValue) == Self.expectedStatuses)
        #expect(results.filter(\.isReceived).count == 14)
        #expect(results.last?.sequenceNumber == 237)
    }

    @Test func deltasAndArrivalTimes() throws {
        let results = Array(try TransportFeedback(parsing: RTCPVectors.transportFeedback).packets)
        // (sequence number, delta in ticks, arrival µs) for the first 26, from the Python decoder.
        let expected: [(UInt16, Int32?, Int64?)] = [
            (65_530, nil, nil), (65_531, 1, -127_750), (65_532, 2, -127_250), (65_533, 3, -126_500),
            (65_534, 4, -125_500), (65_535, 5, -124_250), (0, nil, nil), (1, nil, nil), (2, nil, nil),
            (3, 6, -122_750), (4, 7, -121_000), (5, 8, -119_000), (6, nil, nil), (7, nil, nil), (8, nil, nil),
            (9, nil, nil), (10, 250, -56_500), (11, 251, 6_250), (12, 255, 70_000), (13, nil, nil),
            (14, nil, nil), (15, 256, 134_000), (16, -4, 133_000), (17, nil, nil), (18, nil, nil), (19, nil, nil),
        ]
        for (result, want) in zip(results, expected) {
            #expect(result.sequenceNumber == want.0)
            #expect(result.receiveDelta == want.1, "seq \(want.0)")
            #expect(result.arrivalTimeMicroseconds == want.2, "seq \(want.0)")
        }
        #expect(results[15].status == .receivedWithoutDelta && results[15].isReceived)
    }

    @Test func runLengthChunkOfTheDraft() throws {
        // One run-length chunk 0x00DD: 221 packets not received, no deltas, then 2 zero bytes.
        let bytes: [UInt8] = [0x8F, 0xCD, 0x00, 0x05, 0, 0, 0, 1, 0, 0, 0, 2,
                              0x00, 0x0A, 0x00, 0xDD, 0x00, 0x00, 0x01, 0x00, 0x00, 0xDD, 0x00, 0x00]
        let feedback = try TransportFeedback(parsing: bytes)
        let results = Array(feedback.packets)
        #expect(results.count == 221)
        #expect(results.allSatisfy { $0.status == .notReceived && $0.receiveDelta == nil })
        #expect(feedback.referenceTimeMicroseconds == 64_000)
    }

    @Test func lastVectorChunkMayCoverMoreThanTheCount() throws {
        // Status count 3, one 2-bit vector chunk of 7 symbols: small, large, small, rest ignored.
        // 1 1 01 10 01 11 11 11 11 → 0xD9 0xFF; deltas 04, 0x0008, 02; no padding needed.
        let bytes: [UInt8] = [0x8F, 0xCD, 0x00, 0x06, 0, 0, 0, 1, 0, 0, 0, 2,
                              0x00, 0x01, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0xD9, 0xFF, 0x04, 0x00,
                              0x08, 0x02, 0x00, 0x00]
        let results = Array(try TransportFeedback(parsing: bytes).packets)
        #expect(results.map(\.receiveDelta) == [4, 8, 2])
        #expect(results.map(\.arrivalTimeMicroseconds) == [1_000, 3_000, 3_500])
    }

    @Test func refusesInconsistentBodies() {
        var bytes = RTCPVectors.transportFeedbackZeroPadded
        bytes[15] = 0xF5  // one status more than the chunks describe: needs another chunk
        #expect(throws: RTCPParseError.self) { try TransportFeedback(parsing: bytes) }
        bytes = RTCPVectors.transportFeedbackZeroPadded
        bytes[14] = 0
        bytes[15] = 0  // status count 0
        #expect(throws: RTCPParseError.malformedBody) { try TransportFeedback(parsing: bytes) }
        bytes = RTCPVectors.transportFeedbackZeroPadded
        bytes[25] = 0x05  // large-delta run of 5 needs 6 more delta bytes than exist
        #expect(throws: RTCPParseError.self) { try TransportFeedback(parsing: bytes) }
    }
}
