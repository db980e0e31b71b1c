import ChorusCore
import RTP
import Testing

/// Packets built with Python's struct.pack from the RFC 3550 §5.1 and RFC 8285 layouts.
enum RTPVectors {
    /// M=1 PT=111 seq=0x1234 ts=0xDEADBEEF SSRC=0x11223344, payload 01 02 03.
    static let minimal: [UInt8] = [
        0x80, 0xEF, 0x12, 0x34, 0xDE, 0xAD, 0xBE, 0xEF, 0x11, 0x22, 0x33, 0x44, 0x01, 0x02, 0x03,
    ]
    /// P X CC=2, PT=96 seq=65535 ts=90000 SSRC=0xCAFEBABE, CSRCs 0x01020304 0x05060708,
    /// one-byte block: audio level id 1 (V, 42), abs-send-time id 2 (0x123456),
    /// transport-cc id 3 (0xABCD), mid id 4 ("a1"); payload AA BB; 4 bytes of padding.
    static let full: [UInt8] = [
        0xB2, 0x60, 0xFF, 0xFF, 0x00, 0x01, 0x5F, 0x90, 0xCA, 0xFE, 0xBA, 0xBE, 0x01, 0x02, 0x03, 0x04,
        0x05, 0x06, 0x07, 0x08, 0xBE, 0xDE, 0x00, 0x03, 0x10, 0xAA, 0x22, 0x12, 0x34, 0x56, 0x31, 0xAB,
        0xCD, 0x41, 0x61, 0x31, 0xAA, 0xBB, 0x00, 0x00, 0x00, 0x04,
    ]
    /// X, PT=100 seq=1 ts=2 SSRC=3; two-byte block (0x1003): id 20 empty, a padding byte,
    /// id 5 "xyz"; payload 42.
    static let twoByte: [UInt8] = [
        0x90, 0x64, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03, 0x10, 0x03, 0x00, 0x02,
        0x14, 0x00, 0x00, 0x05, 0x03, 0x78, 0x79, 0x7A, 0x42,
    ]
    /// One-byte block: id 1 [05], then reserved id 15, then id 2 [07] which must be ignored.
    static let reservedID15: [UInt8] = [
        0x90, 0x64, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03, 0xBE, 0xDE, 0x00, 0x02,
        0x10, 0x05, 0xF0, 0x20, 0x07, 0x00, 0x00, 0x00, 0x01,
    ]
    /// A padding-only probe: P, PT=127, no payload, 8 bytes of padding.
    static let paddingOnly: [UInt8] = [
        0xA0, 0x7F, 0x00, 0x07, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x08,
    ]

    static let all: [[UInt8]] = [minimal, full, twoByte, reservedID15, paddingOnly]
}

@Suite("RTP fixed header (RFC 3550 §5.1)")
struct RTPHeaderTests {
    @Test func minimalPacket() throws {
        let packet = try RTPPacket(parsing: RTPVectors.minimal)
        let header = packet.header
        #expect(header.marker)
        #expect(header.payloadType == PayloadType(111))
        #expect(header.sequenceNumber == 0x1234)
        #expect(header.timestamp == 0xDEAD_BEEF)
        #expect(header.ssrc == SSRC(0x1122_3344))
        #expect(header.csrcCount == 0)
        #expect(!header.hasExtension && !header.hasPadding)
        #expect(header.headerLength == 12)
        #expect(Array(packet.payload) == [1, 2, 3])
        #expect(packet.csrcs.isEmpty)
        #expect(Array(packet.headerExtensions).isEmpty)
    }

    @Test func csrcsExtensionAndPadding() throws {
        let packet = try RTPPacket(parsing: RTPVectors.full)
        let header = packet.header
        #expect(!header.marker)
        #expect(header.payloadType == PayloadType(96))
        #expect(header.sequenceNumber == 65_535)
        #expect(header.timestamp == 90_000)
        #expect(header.ssrc == SSRC(0xCAFE_BABE))
        #expect(Array(packet.csrcs) == [SSRC(0x0102_0304), SSRC(0x0506_0708)])
        #expect(header.extensionProfile == 0xBEDE)
        #expect(header.extensionRange == 24..<36)
        #expect(header.headerLength == 36)
        #expect(header.paddingLength == 4)
        #expect(header.packetLength == RTPVectors.full.count)
        #expect(Array(packet.payload) == [0xAA, 0xBB])
    }

    @Test func paddingOnlyProbeHasEmptyPayload() throws {
        let packet = try RTPPacket(parsing: RTPVectors.paddingOnly)
        #expect(packet.payload.isEmpty)
        #expect(packet.header.paddingLength == 8)
    }

    @Test func parsesFromASliceWithNonZeroStart() throws {
        let buffer = [0xEE, 0xEE, 0xEE] + RTPVectors.full
        let packet = try RTPPacket(parsing: buffer[3...])
        #expect(Array(packet.payload) == [0xAA, 0xBB])
        #expect(Array(packet.csrcs) == [SSRC(0x0102_0304), SSRC(0x0506_0708)])
        #expect(packet.headerExtensions.first(id: 3).map(Array.init) == [0xAB, 0xCD])
    }

    @Test(arguments: [
        // (description, bytes, error)
        ("version 1", [0x40] + RTPVectors.minimal.dropFirst(), RTPParseError.unsupportedVersion(1)),
        ("version 0", [0x00] + RTPVectors.minimal.dropFirst(), .unsupportedVersion(0)),
        ("11 bytes", Array(RTPVectors.minimal.prefix(11)), .truncated),
        ("CC=15 without CSRCs", [0x8F] + RTPVectors.minimal.dropFirst(), .truncated),
        ("padding count 0", [0xA0] + RTPVectors.minimal.dropFirst().dropLast() + [0x00], .invalidPadding),
        ("padding count past header", [0xA0] + RTPVectors.minimal.dropFirst().dropLast() + [0x04], .invalidPadding),
        ("P set, nothing after header", [0xA0] + RTPVectors.minimal.prefix(12).dropFirst(), .invalidPadding),
        ("X set, no extension header", [0x90] + RTPVectors.minimal.dropFirst(), .truncated),
    ] as [(String, [UInt8], RTPParseError)])
    func refusesMalformedHeaders(_ name: String, _ bytes: [UInt8], _ error: RTPParseError) {
        #expect(throws: error, "\(name)") { try RTPHeader(parsing: bytes) }
    }

    @Test func paddingCountMayCoverTheWholePayload() throws {
        // Count 4 = payload (3 bytes) + count byte: legal, leaves an empty payload.
        let bytes = [0xA0] + RTPVectors.minimal.dropFirst() + [0x04]
        let header = try RTPHeader(parsing: bytes)
        #expect(header.payloadRange == 12..<12)
    }

    @Test func lyingExtensionLengthIsTruncated() {
        var bytes = RTPVectors.full
        bytes[23] = 0x04  // claims 16 bytes of extension data, 12 exist before the payload
        // The block would then swallow payload and padding and still fit: 4 words = 16 bytes.
        #expect(throws: RTPParseError.self) { try RTPHeader(parsing: bytes) }
        bytes[23] = 0x20
        #expect(throws: RTPParseError.truncated) { try RTPHeader(parsing: bytes) }
    }

    @Test func malformedOneByteElementIsRefused() {
        var bytes = RTPVectors.full
        bytes[33] = 0x4F  // mid element claims 16 bytes; only 2 remain in the block
        #expect(throws: RTPParseError.malformedHeaderExtension) { try RTPHeader(parsing: bytes) }
    }

    @Test func unknownProfileIsKeptButNotDecoded() throws {
        var bytes = RTPVectors.full
        bytes[20] = 0x12
        bytes[21] = 0x34
        let packet = try RTPPacket(parsing: bytes)
        #expect(packet.header.extensionProfile == 0x1234)
        #expect(packet.headerExtensions.form == nil)
        #expect(Array(packet.headerExtensions).isEmpty)
        #expect(Array(packet.payload) == [0xAA, 0xBB])
    }
}
