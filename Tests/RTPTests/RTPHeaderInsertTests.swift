import ChorusCore
import RTP
import Testing

/// Adding a header extension element on the way out (the transport-wide sequence number): the
/// packet keeps its CSRCs, its other elements, its payload and its padding, and parses back.
@Suite("RTP: adding a header extension element (RFC 8285)")
struct RTPHeaderInsertTests {
    static let payload: [UInt8] = Array(1...40)

    /// V=2, one CSRC, PT 111, seq 7, ts 960, SSRC 0x11223344, CSRC 0x55667788, no extension.
    static let plain: [UInt8] = [0x81, 111, 0, 7, 0, 0, 3, 0xC0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88] + payload

    func adding(_ id: UInt8, _ data: [UInt8], to packet: [UInt8]) throws -> RTPPacket? {
        let header = try RTPHeader(parsing: packet)
        guard let out = RTPHeaderRewriter.addingExtension(id: id, data: data, to: packet, header: header) else { return nil }
        return try RTPPacket(parsing: out)
    }

    @Test func aPacketWithoutABlockGetsAOneByteBlock() throws {
        let packet = try #require(try adding(3, [0x12, 0x34], to: Self.plain))
        #expect(packet.header.extensionProfile == 0xBEDE)
        #expect(packet.headerExtensions.first(id: 3).map(Array.init) == [0x12, 0x34])
        #expect(packet.header.csrcCount == 1 && packet.header.ssrc == SSRC(0x1122_3344))
        #expect(Array(packet.payload) == Self.payload)
        #expect(Array(packet.bytes.prefix(20)) == [0x91, 111, 0, 7, 0, 0, 3, 0xC0, 0x11, 0x22, 0x33, 0x44,
                                                   0x55, 0x66, 0x77, 0x88, 0xBE, 0xDE, 0, 1])
        #expect(Array(packet.bytes[20..<24]) == [0x31, 0x12, 0x34, 0])
    }

    /// The one-allocation form the send path uses: the same bytes as the array form, with
    /// room for the SRTP tag reserved, for a packet with and without an extension block.
    @Test func theSendPathFormWritesTheSameBytesWithRoomForTheTag() throws {
        let mixed: [UInt8] = [0x91, 111, 0, 7, 0, 0, 3, 0xC0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
                              0xBE, 0xDE, 0, 1, 0x20, 0x2A, 0, 0] + Self.payload
        for packet in [Self.plain, mixed] {
            let header = try RTPHeader(parsing: packet)
            let expected = try #require(RTPHeaderRewriter.addingExtension(id: 3, data: [0x01, 0x02], to: packet, header: header))
            let written = [UInt8](arrayLiteral: 0x01, 0x02).withUnsafeBytes {
                RTPHeaderRewriter.addingExtension(id: 3, data: $0, to: packet, header: header, extraCapacity: 16)
            }
            let out = try #require(written)
            #expect(out == expected)
            #expect(out.capacity >= out.count + 16)
            #expect(try RTPPacket(parsing: out).headerExtensions.first(id: 3).map(Array.init) == [0x01, 0x02])
        }
    }

    @Test func anIDAbove14GetsATwoByteBlock() throws {
        let packet = try #require(try adding(20, [0xAB, 0xCD], to: Self.plain))
        #expect(packet.header.extensionProfile == 0x1000)
        #expect(packet.headerExtensions.first(id: 20).map(Array.init) == [0xAB, 0xCD])
        #expect(Array(packet.payload) == Self.payload)
    }

    @Test func anExistingOneByteBlockKeepsItsElements() throws {
        // The mixer's header: csrc-audio-level (ID 2, one level) padded to a word.
        let mixed: [UInt8] = [0x91, 111, 0, 7, 0, 0, 3, 0xC0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
                              0xBE, 0xDE, 0, 1, 0x20, 0x2A, 0, 0] + Self.payload
        let packet = try #require(try adding(3, [0xFF, 0xFE], to: mixed))
        #expect(packet.headerExtensions.first(id: 2).map(Array.init) == [0x2A])
        #expect(packet.headerExtensions.first(id: 3).map(Array.init) == [0xFF, 0xFE])
        #expect(packet.header.extensionRange.count == 8)
        #expect(Array(packet.payload) == Self.payload)
        // A one-byte block cannot hold ID 15 or above.
        #expect(try adding(15, [1, 2], to: mixed) == nil)
    }

    @Test func paddingStaysAtTheEnd() throws {
        var padded = Self.plain
        #expect(RTPHeaderRewriter.appendPadding(count: 4, to: &padded))
        let packet = try #require(try adding(5, [9, 9], to: padded))
        #expect(packet.header.paddingLength == 4)
        #expect(Array(packet.payload) == Self.payload)
        #expect(packet.headerExtensions.first(id: 5).map(Array.init) == [9, 9])
    }
}
