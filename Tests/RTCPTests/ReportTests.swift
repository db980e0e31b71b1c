import ChorusCore
import RTCP
import Testing

@Suite("Sender and receiver reports (RFC 3550 §6.4)")
struct ReportTests {
    static let block = ReportBlock(
        ssrc: SSRC(0xCAFE_BABE), fractionLost: 0x40, cumulativeLost: -2, extendedHighestSequenceNumber: 0x0001_FFFF,
        jitter: 42, lastSenderReport: 0x4567_8ABC, delaySinceLastSenderReport: 0x0001_0000)

    @Test func parsesSenderReport() throws {
        let report = try SenderReport(parsing: RTCPVectors.senderReport)
        #expect(report.ssrc == SSRC(0x1234_5678))
        #expect(report.ntpTimestamp == NTPTimestamp(seconds: 0xE123_4567, fraction: 0x89AB_CDEF))
        #expect(report.rtpTimestamp == 0x1122_3344)
        #expect(report.packetCount == 100)
        #expect(report.octetCount == 16_000)
        #expect(Array(report.reportBlocks) == [Self.block])
        #expect(report.profileExtension.isEmpty)
    }

    @Test func buildsTheSameSenderReport() throws {
        let report = SenderReport(
            ssrc: SSRC(0x1234_5678), ntpTimestamp: NTPTimestamp(rawValue: 0xE123_4567_89AB_CDEF),
            rtpTimestamp: 0x1122_3344, packetCount: 100, octetCount: 16_000, reportBlocks: [Self.block])
        var out: [UInt8] = []
        try report.serialize(into: &out)
        #expect(out == RTCPVectors.senderReport)
        #expect(try SenderReport(parsing: out) == report)
    }

    @Test func receiverReportRoundTrip() throws {
        let empty = try ReceiverReport(parsing: RTCPVectors.receiverReport)
        #expect(empty.ssrc == SSRC(0x0102_0304))
        #expect(empty.reportBlocks.isEmpty)
        var out: [UInt8] = []
        try empty.serialize(into: &out)
        #expect(out == RTCPVectors.receiverReport)

        let blocks = (0..<31).map { ReportBlock(ssrc: SSRC(UInt32($0)), cumulativeLost: Int32($0) - 15) }
        let full = ReceiverReport(ssrc: SSRC(9), reportBlocks: RTCPItemList(blocks))
        out = []
        try full.serialize(into: &out)
        #expect(out.count == 8 + 31 * 24)
        let parsed = try ReceiverReport(parsing: out)
        #expect(Array(parsed.reportBlocks) == blocks)
    }

    @Test func refusesMoreThan31Blocks() {
        let blocks = RTCPItemList((0..<32).map { ReportBlock(ssrc: SSRC(UInt32($0))) })
        var out: [UInt8] = []
        #expect(throws: RTCPSerializationError.tooManyItems(count: 32, limit: 31)) {
            try ReceiverReport(ssrc: SSRC(1), reportBlocks: blocks).serialize(into: &out)
        }
        #expect(throws: RTCPSerializationError.tooManyItems(count: 32, limit: 31)) {
            try SenderReport(ssrc: SSRC(1), ntpTimestamp: NTPTimestamp(rawValue: 0), rtpTimestamp: 0, packetCount: 0,
                             octetCount: 0, reportBlocks: blocks).serialize(into: &out)
        }
    }

    @Test func cumulativeLostIsSigned24Bits() {
        let clampedHigh = ReportBlock(ssrc: SSRC(1), cumulativeLost: .max)
        #expect(clampedHigh.cumulativeLost == 0x7F_FFFF)
        let clampedLow = ReportBlock(ssrc: SSRC(1), cumulativeLost: .min)
        #expect(clampedLow.cumulativeLost == -0x80_0000)
        for value: Int32 in [-0x80_0000, -1, 0, 1, 0x7F_FFFF] {
            var bytes: [UInt8] = []
            ReportBlock(ssrc: SSRC(1), cumulativeLost: value).encode(appendingTo: &bytes)
            #expect(ReportBlock(decoding: bytes[...]).cumulativeLost == value)
        }
    }

    @Test func profileExtensionIsKept() throws {
        var bytes = RTCPVectors.receiverReport + [0xDE, 0xAD, 0xBE, 0xEF]
        bytes[3] = 2
        let report = try ReceiverReport(parsing: bytes)
        #expect(Array(report.profileExtension) == [0xDE, 0xAD, 0xBE, 0xEF])
        var out: [UInt8] = []
        try report.serialize(into: &out)
        #expect(out == bytes)
    }

    @Test func refusesLyingReportCount() {
        var bytes = RTCPVectors.senderReport
        bytes[0] = 0x82  // RC = 2, one block present
        #expect(throws: RTCPParseError.malformedBody) { try SenderReport(parsing: bytes) }
        #expect(throws: RTCPParseError.unexpectedPacketType(.senderReport, format: 1)) {
            try ReceiverReport(parsing: RTCPVectors.senderReport)
        }
    }
}

@Suite("SDES and BYE (RFC 3550 §6.5, §6.6)")
struct SourceDescriptionGoodbyeTests {
    @Test func parsesTwoChunks() throws {
        let sdes = try SourceDescription(parsing: RTCPVectors.sourceDescription)
        let chunks = Array(sdes.chunks)
        #expect(chunks.map(\.source) == [SSRC(0x1234_5678), SSRC(0x0A0B_0C0D)])
        #expect(chunks[0].cname == "chorus")
        #expect(chunks[1].map(\.type) == [.name, .cname])
        #expect(Array(chunks[1]).first?.string == "ab")
        #expect(sdes.cname(of: SSRC(0x0A0B_0C0D)) == "x")
        #expect(sdes.cname(of: SSRC(7)) == nil)
    }

    @Test func buildsTheSameBytes() throws {
        let chunks = [
            SourceDescription.Chunk(source: SSRC(0x1234_5678), cname: "chorus")!,
            SourceDescription.Chunk(source: SSRC(0x0A0B_0C0D), items: [
                SourceDescription.Item(type: .name, text: "ab")!, SourceDescription.Item(type: .cname, text: "x")!,
            ]),
        ]
        var out: [UInt8] = []
        try SourceDescription(chunks: chunks)!.serialize(into: &out)
        #expect(out == RTCPVectors.sourceDescription)
    }

    @Test(arguments: 0...9)
    func cnameOfEveryLengthRoundTrips(_ length: Int) throws {
        let cname = String(repeating: "c", count: length)
        var out: [UInt8] = []
        try SourceDescription(source: SSRC(5), cname: cname)!.serialize(into: &out)
        #expect(out.count % 4 == 0)
        #expect(try SourceDescription(parsing: out).cname(of: SSRC(5)) == cname)
    }

    @Test func refusesOverlongText() {
        #expect(SourceDescription(source: SSRC(1), cname: String(repeating: "x", count: 256)) == nil)
        #expect(SourceDescription.Item(type: .cname, text: String(repeating: "x", count: 255)) != nil)
        #expect(Goodbye(sources: [SSRC(1)], reason: String(repeating: "x", count: 256)) == nil)
    }

    @Test func refusesUnterminatedChunk() {
        var bytes = RTCPVectors.sourceDescription
        bytes[31] = 0x01  // the second chunk's only null byte
        #expect(throws: RTCPParseError.malformedBody) { try SourceDescription(parsing: bytes) }
        bytes = RTCPVectors.sourceDescription
        bytes[0] = 0x83  // SC = 3, two chunks present
        #expect(throws: RTCPParseError.malformedBody) { try SourceDescription(parsing: bytes) }
    }

    @Test func goodbyeWithReason() throws {
        let bye = try Goodbye(parsing: RTCPVectors.goodbye)
        #expect(Array(bye.sources) == [SSRC(0x1234_5678)])
        #expect(bye.reasonString == "bye")
        var out: [UInt8] = []
        try Goodbye(sources: [SSRC(0x1234_5678)], reason: "bye")!.serialize(into: &out)
        #expect(out == RTCPVectors.goodbye)
    }

    @Test func goodbyeWithoutReasonAndPaddedReason() throws {
        var out: [UInt8] = []
        try Goodbye(sources: [SSRC(1), SSRC(2)])!.serialize(into: &out)
        #expect(out == [0x82, 0xCB, 0x00, 0x02, 0, 0, 0, 1, 0, 0, 0, 2])
        #expect(try Goodbye(parsing: out).reason == nil)
        out = []
        try Goodbye(sources: [SSRC(1)], reason: "gone")!.serialize(into: &out)
        #expect(out.count == 4 + 4 + 8)  // 1 + 4 reason bytes padded to 8
        #expect(try Goodbye(parsing: out).reasonString == "gone")
    }

    @Test func refusesReasonPastTheEnd() {
        var bytes = RTCPVectors.goodbye
        bytes[8] = 4  // reason claims 4 bytes, 3 follow
        #expect(throws: RTCPParseError.malformedBody) { try Goodbye(parsing: bytes) }
    }
}
