import ChorusCore
import RTP
import Testing

@Suite("In-place RTP header rewriting")
struct RTPHeaderRewriterTests {
    @Test func rewritesFixedFieldsInAnArray() throws {
        var bytes = RTPVectors.full
        #expect(RTPHeaderRewriter.setSequenceNumber(7, in: &bytes))
        #expect(RTPHeaderRewriter.setTimestamp(0x0102_0304, in: &bytes))
        #expect(RTPHeaderRewriter.setSSRC(SSRC(42), in: &bytes))
        #expect(RTPHeaderRewriter.setPayloadType(PayloadType(127)!, in: &bytes))
        #expect(RTPHeaderRewriter.setMarker(true, in: &bytes))
        let packet = try RTPPacket(parsing: bytes)
        #expect(packet.header.sequenceNumber == 7)
        #expect(packet.header.timestamp == 0x0102_0304)
        #expect(packet.header.ssrc == SSRC(42))
        #expect(packet.header.payloadType == PayloadType(127))
        #expect(packet.header.marker)
        // Everything else is untouched.
        #expect(Array(bytes[12...]) == Array(RTPVectors.full[12...]))
        #expect(bytes[0] == RTPVectors.full[0])
    }

    @Test func payloadTypeKeepsMarkerAndMarkerKeepsPayloadType() throws {
        var bytes = RTPVectors.minimal  // M=1, PT=111
        RTPHeaderRewriter.setPayloadType(PayloadType(96)!, in: &bytes)
        #expect(bytes[1] == 0x80 | 96)
        RTPHeaderRewriter.setMarker(false, in: &bytes)
        #expect(bytes[1] == 96)
    }

    @Test func rewritesThroughARawBufferAndASlice() throws {
        var bytes = RTPVectors.minimal
        bytes.withUnsafeMutableBytes { raw in
            var raw = raw  // the buffer pointer is a value; the bytes it points to are shared
            _ = RTPHeaderRewriter.setSequenceNumber(0xBEEF, in: &raw)
        }
        var slice = bytes[0...]
        RTPHeaderRewriter.setSSRC(SSRC(0xAABB_CCDD), in: &slice)
        let header = try RTPHeader(parsing: slice)
        #expect(header.sequenceNumber == 0xBEEF)
        #expect(header.ssrc == SSRC(0xAABB_CCDD))
    }

    @Test func shortBuffersAreLeftAlone() {
        var short: [UInt8] = [0x80, 0x60, 0x00]
        #expect(!RTPHeaderRewriter.setSequenceNumber(1, in: &short))
        #expect(!RTPHeaderRewriter.setTimestamp(1, in: &short))
        #expect(!RTPHeaderRewriter.setSSRC(SSRC(1), in: &short))
        #expect(!RTPHeaderRewriter.setPayloadType(PayloadType(1)!, in: &short))
        #expect(!RTPHeaderRewriter.setMarker(true, in: &short))
        #expect(!RTPHeaderRewriter.appendPadding(count: 4, to: &short))
        #expect(short == [0x80, 0x60, 0x00])
    }

    @Test func restampsExtensionValues() throws {
        var bytes = RTPVectors.full
        let header = try RTPHeader(parsing: bytes)
        #expect(RTPHeaderRewriter.setTransportSequenceNumber(0x0102, extensionID: 3, in: &bytes, header: header))
        #expect(RTPHeaderRewriter.setAbsoluteSendTime(AbsoluteSendTime(rawValue: 0xABCDEF), extensionID: 2,
                                                      in: &bytes, header: header))
        #expect(RTPHeaderRewriter.overwriteExtension(id: 4, with: Array("b2".utf8), in: &bytes, header: header))
        let values = RTPHeaderExtensionMap(mid: 4, transportSequenceNumber: 3, absoluteSendTime: 2)
            .decode(try RTPPacket(parsing: bytes).headerExtensions)
        #expect(values.transportSequenceNumber == 0x0102)
        #expect(values.absoluteSendTime?.rawValue == 0xABCDEF)
        #expect(values.midString == "b2")
        // Absent IDs and length mismatches change nothing.
        #expect(!RTPHeaderRewriter.setTransportSequenceNumber(1, extensionID: 9, in: &bytes, header: header))
        #expect(!RTPHeaderRewriter.overwriteExtension(id: 4, with: Array("abc".utf8), in: &bytes, header: header))
        #expect(!RTPHeaderRewriter.setAbsoluteSendTime(AbsoluteSendTime(rawValue: 1), extensionID: 3,
                                                       in: &bytes, header: header))
    }

    @Test func appendsPadding() throws {
        var bytes = RTPVectors.minimal
        #expect(RTPHeaderRewriter.appendPadding(count: 5, to: &bytes))
        let packet = try RTPPacket(parsing: bytes)
        #expect(packet.header.paddingLength == 5)
        #expect(Array(packet.payload) == [1, 2, 3])
        #expect(!RTPHeaderRewriter.appendPadding(count: 4, to: &bytes))  // already padded
        var other = RTPVectors.minimal
        #expect(!RTPHeaderRewriter.appendPadding(count: 0, to: &other))
        #expect(!RTPHeaderRewriter.appendPadding(count: 256, to: &other))
    }
}
