import ChorusCore
import RTCP
import Testing

@Suite("Generic NACK (RFC 4585 §6.2.1)")
struct GenericNACKTests {
    @Test func expandsPIDAndBLP() throws {
        let nack = try GenericNACK(parsing: RTCPVectors.genericNACK)
        #expect(nack.senderSSRC == SSRC(1))
        #expect(nack.mediaSSRC == SSRC(0xCAFE_BABE))
        #expect(Array(nack.items) == [GenericNACK.Item(packetID: 100, lostPacketBitmask: 0x8005),
                                      GenericNACK.Item(packetID: 65_535, lostPacketBitmask: 1)])
        // Computed independently in Python: bit i marks PID+i+1, wrapping at 2^16.
        #expect(Array(nack.lostSequenceNumbers) == [100, 101, 103, 116, 65_535, 0])
    }

    @Test(arguments: [
        // (bitmask, expected lost numbers after PID 1000)
        (UInt16(0x0000), [UInt16(1000)]),
        (0x0001, [1000, 1001]),
        (0x8000, [1000, 1016]),
        (0xFFFF, Array(1000...1016)),
        (0x5555, [1000, 1001, 1003, 1005, 1007, 1009, 1011, 1013, 1015]),
    ] as [(UInt16, [UInt16])])
    func bitmaskTable(_ bitmask: UInt16, _ expected: [UInt16]) {
        #expect(Array(GenericNACK.Item(packetID: 1000, lostPacketBitmask: bitmask)) == expected)
    }

    @Test func buildsFromLostSequenceNumbers() throws {
        let lost: [UInt16] = [100, 101, 103, 116, 65_535, 0]
        let nack = GenericNACK(senderSSRC: SSRC(1), mediaSSRC: SSRC(0xCAFE_BABE), lostSequenceNumbers: lost)
        var out: [UInt8] = []
        try nack.serialize(into: &out)
        #expect(out == RTCPVectors.genericNACK)
    }

    @Test func packsAcrossTheWrapAndSplitsBeyond16() {
        let lost: [UInt16] = [65_530, 65_531, 65_535, 0, 5, 10, 10, 30]
        let nack = GenericNACK(senderSSRC: SSRC(1), mediaSSRC: SSRC(2), lostSequenceNumbers: lost)
        // 65530 covers up to 65530+16 = 10 (mod 2^16); 30 needs a new entry; the repeat is absorbed.
        #expect(nack.items.count == 2)
        #expect(Array(nack.lostSequenceNumbers) == [65_530, 65_531, 65_535, 0, 5, 10, 30])
    }

    @Test func roundTripsManyLosses() throws {
        var generator = SplitMix64(seed: 4585)
        var lost: [UInt16] = []
        var current: UInt16 = 65_000
        for _ in 0..<500 {
            current &+= UInt16.random(in: 1...40, using: &generator)
            lost.append(current)
        }
        var out: [UInt8] = []
        try GenericNACK(senderSSRC: SSRC(1), mediaSSRC: SSRC(2), lostSequenceNumbers: lost).serialize(into: &out)
        let parsed = try GenericNACK(parsing: out)
        #expect(Array(parsed.lostSequenceNumbers) == lost)
    }

    @Test func refusesEmptyAndRaggedFCI() {
        var out: [UInt8] = []
        #expect(throws: RTCPSerializationError.empty) {
            try GenericNACK(senderSSRC: SSRC(1), mediaSSRC: SSRC(2), lostSequenceNumbers: []).serialize(into: &out)
        }
        let empty: [UInt8] = [0x81, 0xCD, 0x00, 0x02, 0, 0, 0, 1, 0, 0, 0, 2]
        #expect(throws: RTCPParseError.malformedBody) { try GenericNACK(parsing: empty) }
    }
}

@Suite("PLI, FIR and REMB (RFC 4585 §6.3.1, RFC 5104 §4.3.1, draft-alvestrand-rmcat-remb)")
struct PayloadSpecificFeedbackTests {
    @Test func pictureLossIndication() throws {
        let pli = try PictureLossIndication(parsing: RTCPVectors.pictureLossIndication)
        #expect(pli == PictureLossIndication(senderSSRC: SSRC(1), mediaSSRC: SSRC(2)))
        var out: [UInt8] = []
        try pli.serialize(into: &out)
        #expect(out == RTCPVectors.pictureLossIndication)
        #expect(throws: RTCPParseError.unexpectedPacketType(.payloadSpecificFeedback, format: 1)) {
            try FullIntraRequest(parsing: RTCPVectors.pictureLossIndication)
        }
    }

    @Test func fullIntraRequest() throws {
        let fir = try FullIntraRequest(parsing: RTCPVectors.fullIntraRequest)
        #expect(fir.senderSSRC == SSRC(1) && fir.mediaSSRC == SSRC(0))
        let expected: [FullIntraRequest.Entry] = [.init(ssrc: SSRC(0xCAFE_BABE), sequenceNumber: 7),
                                                  .init(ssrc: SSRC(0x0102_0304), sequenceNumber: 255)]
        #expect(Array(fir.entries) == expected)
        var out: [UInt8] = []
        try FullIntraRequest(senderSSRC: SSRC(1), entries: RTCPItemList(expected)).serialize(into: &out)
        #expect(out == RTCPVectors.fullIntraRequest)
        var ragged = RTCPVectors.fullIntraRequest.dropLast(4) + []
        ragged[3] = 5
        #expect(throws: RTCPParseError.malformedBody) { try FullIntraRequest(parsing: Array(ragged)) }
    }

    @Test func rembOneMegabit() throws {
        #expect(ReceiverEstimatedMaximumBitrate.encode(bitrate: 1_000_000) == (2, 250_000))
        let remb = try ReceiverEstimatedMaximumBitrate(parsing: RTCPVectors.remb)
        #expect(remb.bitrate == 1_000_000)
        #expect(Array(remb.ssrcs) == [SSRC(0xCAFE_BABE), SSRC(0x0102_0304)])
        var out: [UInt8] = []
        try ReceiverEstimatedMaximumBitrate(senderSSRC: SSRC(1), bitrate: 1_000_000,
                                            ssrcs: [SSRC(0xCAFE_BABE), SSRC(0x0102_0304)]).serialize(into: &out)
        #expect(out == RTCPVectors.remb)
    }

    @Test(arguments: [UInt64(0), 1, 0x3_FFFF, 0x4_0000, 300_000, 2_500_000, 123_456_789, 1 << 40, UInt64.max])
    func rembBitrateEncodingRoundsDownWithin18Bits(_ bitrate: UInt64) throws {
        let (exponent, mantissa) = ReceiverEstimatedMaximumBitrate.encode(bitrate: bitrate)
        #expect(mantissa <= 0x3_FFFF && exponent <= 63)
        let decoded = ReceiverEstimatedMaximumBitrate.decode(exponent: exponent, mantissa: mantissa)
        #expect(decoded <= bitrate)
        // Truncation loses less than one unit of 2^exponent.
        #expect(bitrate - decoded < UInt64(1) << UInt64(exponent))
        var out: [UInt8] = []
        try ReceiverEstimatedMaximumBitrate(senderSSRC: SSRC(1), bitrate: bitrate, ssrcs: []).serialize(into: &out)
        #expect(try ReceiverEstimatedMaximumBitrate(parsing: out).bitrate == decoded)
    }

    @Test func rembDecodeSaturatesInsteadOfOverflowing() {
        #expect(ReceiverEstimatedMaximumBitrate.decode(exponent: 63, mantissa: 0x3_FFFF) == .max)
        #expect(ReceiverEstimatedMaximumBitrate.decode(exponent: 46, mantissa: 0x3_FFFF) == 0x3_FFFF << 46)
        #expect(ReceiverEstimatedMaximumBitrate.decode(exponent: 47, mantissa: 0x3_FFFF) == .max)
        #expect(ReceiverEstimatedMaximumBitrate.decode(exponent: 63, mantissa: 0) == 0)
    }

    @Test func rembRefusesWrongSSRCCount() {
        var bytes = RTCPVectors.remb
        bytes[16] = 3
        #expect(throws: RTCPParseError.malformedBody) { try ReceiverEstimatedMaximumBitrate(parsing: bytes) }
        bytes[16] = 1
        #expect(throws: RTCPParseError.malformedBody) { try ReceiverEstimatedMaximumBitrate(parsing: bytes) }
    }

    @Test func otherApplicationFeedbackIsUnknown() throws {
        var bytes = RTCPVectors.remb
        bytes[12] = UInt8(ascii: "X")
        guard case .unknown(let type, let format, let packet) = try RTCPPacket(parsing: bytes) else {
            Issue.record("expected .unknown")
            return
        }
        #expect(type == .payloadSpecificFeedback && format == 15 && Array(packet) == bytes)
    }
}
