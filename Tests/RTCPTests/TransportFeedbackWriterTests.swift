import ChorusCore
import RTCP
import Testing

@testable import RTCP

/// The transport-cc writer: byte layouts worked out by hand from the draft's field definitions,
/// the draft's own chunk examples, and round trips through the parser.
@Suite("Transport-cc feedback writer (draft-holmer-…-01 §3.1)")
struct TransportFeedbackWriterTests {
    @Test func aMessageMatchesTheDraftLayoutByteForByte() throws {
        // seq 100 at 3 × 64 ms + 1 ms; 101 250 µs later; 102 lost; 103 100 ms later (a large
        // delta, 400 ticks); 104 1 ms before 103 (negative, −4 ticks).
        let base: Int64 = 3 * 64_000 + 1_000
        var writer = TransportFeedbackWriter(sequenceNumber: 100, arrivalMicroseconds: base)
        let added1 = writer.add(sequenceNumber: 101, arrivalMicroseconds: base + 250)
        #expect(added1)
        let added2 = writer.add(sequenceNumber: 103, arrivalMicroseconds: base + 250 + 100_000)
        #expect(added2)
        let added3 = writer.add(sequenceNumber: 104, arrivalMicroseconds: base + 250 + 99_000)
        #expect(added3)
        var bytes: [UInt8] = []
        writer.serialize(senderSSRC: SSRC(0x0102_0304), mediaSSRC: SSRC(0xCAFE_BABE), feedbackPacketCount: 7,
                         into: &bytes)
        #expect(bytes == [
            0x8F, 0xCD, 0x00, 0x06,  // V=2, FMT=15, PT=205, 6 words follow
            0x01, 0x02, 0x03, 0x04, 0xCA, 0xFE, 0xBA, 0xBE,  // sender, media source
            0x00, 0x64, 0x00, 0x05,  // base sequence number 100, 5 statuses
            0x00, 0x00, 0x03, 0x07,  // reference time 3 (× 64 ms), feedback packet count 7
            0xD4, 0xA0,  // 2-bit vector: small, small, not received, large, large, (pad, pad)
            0x04, 0x01, 0x01, 0x90, 0xFF, 0xFC,  // deltas: 4, 1, 400, −4 ticks
        ])
        let parsed = try TransportFeedback(parsing: bytes)
        #expect(parsed.packets.map(\.arrivalTimeMicroseconds) == [base, base + 250, nil, base + 100_250, base + 99_250])
    }

    @Test func theDraftsChunkExamplesComeOutAsInTheDraft() {
        typealias S = TransportFeedback.PacketStatus
        // §3.1.4 example 1: a 1-bit status vector.
        let vector: [S] = [0, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0].map { $0 == 1 ? .receivedSmallDelta : .notReceived }
        #expect(TransportFeedbackWriter.chunks(vector) == [0x9F1C])
        // §3.1.3 example 1: a run of 221 not received.
        #expect(TransportFeedbackWriter.chunks(Array(repeating: .notReceived, count: 221)) == [0x00DD])
        // A run longer than 8,191 takes two chunks.
        #expect(TransportFeedbackWriter.chunks(Array(repeating: .notReceived, count: 8_200)) == [0x1FFF, 0x0009])
        // Two large deltas at the end: a run.
        #expect(TransportFeedbackWriter.chunks([.receivedLargeOrNegativeDelta, .receivedLargeOrNegativeDelta]) == [0x4002])
    }

    /// Random arrivals (seeded) survive the round trip: same statuses, and every arrival within
    /// half a tick of the truth, however many deltas precede it (rounding never accumulates).
    @Test(arguments: [1, 2, 3, 4, 5])
    func randomArrivalsRoundTripWithinHalfATick(seed: UInt64) throws {
        var random = SplitMix(seed: seed)
        var time: Int64 = 10_000_000 + Int64(random.next() % 64_000)
        var truth: [Int64?] = [time]
        var writer = TransportFeedbackWriter(sequenceNumber: 65_500, arrivalMicroseconds: time)
        var sequence: UInt16 = 65_500
        while truth.count < 200 {
            sequence &+= 1
            if random.next() % 10 == 0 {
                truth.append(nil)
                continue
            }
            // Mostly small steps, sometimes a long pause, sometimes a reordering.
            let step = random.next() % 20 == 0 ? Int64(random.next() % 200_000) : Int64(random.next() % 5_000) - 500
            time += step
            let added4 = writer.add(sequenceNumber: sequence, arrivalMicroseconds: time)
            #expect(added4)
            truth.append(time)
        }
        var bytes: [UInt8] = []
        writer.serialize(senderSSRC: SSRC(1), mediaSSRC: SSRC(2), feedbackPacketCount: 0, into: &bytes)
        let parsed = try TransportFeedback(parsing: bytes)
        let results = Array(parsed.packets)
        #expect(results.count == truth.count)
        #expect(results.first?.sequenceNumber == 65_500 && results.last?.sequenceNumber == sequence)
        for (result, expected) in zip(results, truth) {
            #expect(result.isReceived == (expected != nil))
            if let expected, let got = result.arrivalTimeMicroseconds { #expect(abs(got - expected) <= 125) }
        }
    }

    @Test func whatAMessageCannotCarryIsRefusedAndLeavesItUnchanged() {
        var writer = TransportFeedbackWriter(sequenceNumber: 0, arrivalMicroseconds: 0)
        // A delta beyond ±8.19 s (16 bits of 250 µs).
        let added5 = writer.add(sequenceNumber: 1, arrivalMicroseconds: 9_000_000)
        #expect(!added5)
        let added6 = writer.add(sequenceNumber: 1, arrivalMicroseconds: -9_000_000)
        #expect(!added6)
        // An older sequence number, or one so far ahead that the message would exceed its bound.
        let added7 = writer.add(sequenceNumber: 0, arrivalMicroseconds: 10)
        #expect(!added7)
        let added8 = writer.add(sequenceNumber: 65_535, arrivalMicroseconds: 10)
        #expect(!added8)
        let added9 = writer.add(sequenceNumber: UInt16(TransportFeedbackWriter.maximumStatusCount), arrivalMicroseconds: 10)
        #expect(!added9)
        #expect(writer.statusCount == 1 && writer.nextSequenceNumber == 1)
        // At most 250 received packets per message.
        for sequence in 1..<UInt16(TransportFeedbackWriter.maximumReceivedCount) {
            let added10 = writer.add(sequenceNumber: sequence, arrivalMicroseconds: Int64(sequence) * 1_000)
            #expect(added10)
        }
        let added11 = writer.add(sequenceNumber: 250, arrivalMicroseconds: 250_000)
        #expect(!added11)
    }

    /// A 64-bit SplitMix generator: deterministic test data.
    struct SplitMix {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
