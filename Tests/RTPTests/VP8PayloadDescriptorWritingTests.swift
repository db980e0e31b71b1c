import RTP
import Testing

/// The writer beside the parser (RFC 7741 §4.2): what a sender writes must be the bytes the
/// RFC lays out, and must parse back to the same descriptor.
@Suite("VP8 payload descriptor: writing (RFC 7741 §4.2)")
struct VP8PayloadDescriptorWritingTests {
    /// Packets laid out as RFC 7741 §4.6's example stream is (the RTP payload's first bytes),
    /// with every bit spelled out.
    static let examples: [(name: String, descriptor: VP8PayloadDescriptor, bytes: [UInt8])] = [
        // X=0 R=0 N=0 S=1 R=0 PID=0: a frame's first packet without any extension.
        ("first packet, no extensions", VP8PayloadDescriptor(isStartOfPartition: true), [0b0001_0000]),
        // X=1 S=1 PID=0 | I=1 | M=0 PictureID=0x11: a key frame's first packet, 7-bit picture ID.
        ("7-bit picture ID", VP8PayloadDescriptor(isStartOfPartition: true, pictureID: 0x11, hasLongPictureID: false),
         [0b1001_0000, 0b1000_0000, 0b0001_0001]),
        // X=1 S=0 PID=0 | I=1 | M=1 PictureID=4711 (0x1267) in two bytes: a packet in mid-frame.
        ("15-bit picture ID, mid-frame", VP8PayloadDescriptor(isStartOfPartition: false, pictureID: 4_711),
         [0b1000_0000, 0b1000_0000, 0b1001_0010, 0b0110_0111]),
        // X=1 S=1 PID=1: a frame's second partition starting its own packet, picture ID 0x1111.
        ("second partition", VP8PayloadDescriptor(isStartOfPartition: true, partitionIndex: 1, pictureID: 0x1111),
         [0b1001_0001, 0b1000_0000, 0b1001_0001, 0b0001_0001]),
        // X=1 N=1 S=1 | I=1 L=1 T=1 | M=0 PictureID=0x25 | TL0PICIDX=12 | TID=2 Y=1: a
        // discardable frame of the top temporal layer of three.
        ("temporal layers", VP8PayloadDescriptor(isNonReferenceFrame: true, isStartOfPartition: true, pictureID: 0x25,
                                                 hasLongPictureID: false, tl0PictureIndex: 12, temporalLayerID: 2,
                                                 isLayerSync: true),
         [0b1011_0000, 0b1110_0000, 0b0010_0101, 0b0000_1100, 0b1010_0000]),
        // X=1 S=1 | K=1 | KEYIDX=5: a key index alone (TID and Y absent, so zero).
        ("key index only", VP8PayloadDescriptor(isStartOfPartition: true, keyIndex: 5),
         [0b1001_0000, 0b0001_0000, 0b0000_0101]),
    ]

    @Test func theExamplesAreWrittenBitForBitAndParseBack() throws {
        for example in Self.examples {
            #expect(example.descriptor.serialize() == example.bytes, "\(example.name)")
            #expect(example.descriptor.length == example.bytes.count, "\(example.name)")
            let parsed = try VP8PayloadDescriptor(parsing: example.bytes + [0x9D])
            #expect(parsed == example.descriptor, "\(example.name)")
        }
    }

    /// The parser's own vectors (built apart, in Python) are written back byte for byte from
    /// the fields the parser read.
    @Test func theParsersVectorsAreWrittenBackExactly() throws {
        for vector in VP8Vectors.all {
            let parsed = try VP8PayloadDescriptor(parsing: vector)
            let written = VP8PayloadDescriptor(
                isNonReferenceFrame: parsed.isNonReferenceFrame, isStartOfPartition: parsed.isStartOfPartition,
                partitionIndex: parsed.partitionIndex, pictureID: parsed.pictureID, hasLongPictureID: parsed.hasLongPictureID,
                tl0PictureIndex: parsed.tl0PictureIndex, temporalLayerID: parsed.temporalLayerID,
                isLayerSync: parsed.isLayerSync, keyIndex: parsed.keyIndex)
            #expect(written == parsed)
            #expect(written.serialize() == Array(vector.prefix(parsed.length)), "\(vector)")
        }
    }

    /// Every combination of present fields and widths round-trips, and the rewriters find the
    /// fields where the writer put them.
    @Test func everyCombinationRoundTrips() throws {
        var count = 0
        for pictureID in [nil, UInt16(0x5A), 0x7ABC] as [UInt16?] {
            for long in [false, true] {
                for tl0 in [nil, UInt8(0xFE)] as [UInt8?] {
                    for tid in [nil, UInt8(0), 3] as [UInt8?] {
                        for keyIndex in [nil, UInt8(31)] as [UInt8?] {
                            let descriptor = VP8PayloadDescriptor(
                                isNonReferenceFrame: count % 2 == 0, isStartOfPartition: count % 3 == 0,
                                partitionIndex: UInt8(count % 8), pictureID: pictureID, hasLongPictureID: long,
                                tl0PictureIndex: tl0, temporalLayerID: tid, isLayerSync: tid == 3, keyIndex: keyIndex)
                            var payload = descriptor.serialize() + [0x10, 0x20]
                            #expect(try VP8PayloadDescriptor(parsing: payload) == descriptor)
                            if pictureID != nil {
                                #expect(descriptor.rewritePictureID(0x42, in: &payload, payloadOffset: 0))
                                #expect(try VP8PayloadDescriptor(parsing: payload).pictureID == 0x42)
                            }
                            #expect(payload.suffix(2) == [0x10, 0x20])
                            count += 1
                        }
                    }
                }
            }
        }
        #expect(count == 72)
    }

    /// Values wider than their fields are cut to them, as the parser would read the bytes:
    /// PID 3 bits, picture ID 7 or 15, TID 2, KEYIDX 5; Y means nothing without a TID.
    @Test func valuesAreCutToTheirFields() throws {
        let wide = VP8PayloadDescriptor(isStartOfPartition: true, partitionIndex: 9, pictureID: 0x8123,
                                        temporalLayerID: 7, keyIndex: 40)
        #expect(wide.partitionIndex == 1 && wide.pictureID == 0x0123 && wide.temporalLayerID == 3 && wide.keyIndex == 8)
        #expect(try VP8PayloadDescriptor(parsing: wide.serialize() + [0]) == wide)
        let short = VP8PayloadDescriptor(isStartOfPartition: true, pictureID: 0x1FF, hasLongPictureID: false)
        #expect(short.pictureID == 0x7F && !short.hasLongPictureID && short.serialize() == [0x90, 0x80, 0x7F])
        let syncAlone = VP8PayloadDescriptor(isStartOfPartition: true, isLayerSync: true)
        #expect(!syncAlone.isLayerSync && syncAlone.serialize() == [0x10])
        let noPicture = VP8PayloadDescriptor(isStartOfPartition: false, hasLongPictureID: true, tl0PictureIndex: 3)
        #expect(!noPicture.hasLongPictureID && noPicture.serialize() == [0x80, 0x40, 0x03])
    }

    /// `write(into:)` appends after what the buffer holds (an RTP header), and nothing more.
    @Test func writingAppendsAfterTheHeader() {
        var packet: [UInt8] = [0x80, 96, 0, 1]
        VP8PayloadDescriptor(isStartOfPartition: true, pictureID: 0x1234).write(into: &packet)
        #expect(packet == [0x80, 96, 0, 1, 0x90, 0x80, 0x92, 0x34])
    }
}
