import ChorusTestSupport
import RTP
import Testing

/// Payloads built in Python from the RFC 7741 §4.2 descriptor and RFC 6386 §9.1 frame tag.
enum VP8Vectors {
    /// X S PID=0, I with 7-bit picture ID 0x55; key frame 640x480 (vertical scale 1),
    /// first partition 1234 bytes, show_frame.
    static let shortPictureIDKeyFrame: [UInt8] = [0x90, 0x80, 0x55, 0x50, 0x9A, 0x00, 0x9D, 0x01, 0x2A, 0x80, 0x02, 0xE0, 0x41]
    /// X S, I L T K: 15-bit picture ID 0x7FFF, TL0PICIDX 0xFE, TID 2 Y KEYIDX 17; delta frame.
    static let longPictureIDAllFields: [UInt8] = [0x90, 0xF0, 0xFF, 0xFF, 0xFE, 0xB1, 0xB1, 0x09, 0x00, 0x11, 0x22]
    /// No extension byte, S: delta frame.
    static let plain: [UInt8] = [0x10, 0xB1, 0x09, 0x00, 0x11, 0x22]
    /// N, PID 3, not a partition start.
    static let nonReference: [UInt8] = [0x23, 0x99]
    /// X with only K: KEYIDX 5.
    static let keyIndexOnly: [UInt8] = [0x80, 0x10, 0x05, 0x99]
    /// X with only L: TL0PICIDX 9.
    static let tl0Only: [UInt8] = [0x80, 0x40, 0x09, 0x99]

    static let all = [shortPictureIDKeyFrame, longPictureIDAllFields, plain, nonReference, keyIndexOnly, tl0Only]
}

@Suite("VP8 payload descriptor (RFC 7741 §4.2, §4.3)")
struct VP8PayloadDescriptorTests {
    @Test func sevenBitPictureIDAndKeyFrame() throws {
        let payload = VP8Vectors.shortPictureIDKeyFrame[...]
        let descriptor = try VP8PayloadDescriptor(parsing: payload)
        #expect(descriptor.pictureID == 0x55)
        #expect(!descriptor.hasLongPictureID)
        #expect(descriptor.isStartOfFrame)
        #expect(descriptor.tl0PictureIndex == nil && descriptor.temporalLayerID == nil && descriptor.keyIndex == nil)
        #expect(descriptor.length == 3)
        #expect(descriptor.isKeyFrame(payload: payload))
        let header = try #require(descriptor.payloadHeader(payload: payload))
        #expect(header.isKeyFrame && header.showFrame && header.version == 0)
        #expect(header.firstPartitionSize == 1234)
        #expect(header.width == 640 && header.height == 480)
        #expect(header.horizontalScale == 0 && header.verticalScale == 1)
    }

    @Test func fifteenBitPictureIDWithAllFields() throws {
        let payload = VP8Vectors.longPictureIDAllFields[...]
        let descriptor = try VP8PayloadDescriptor(parsing: payload)
        #expect(descriptor.pictureID == 0x7FFF)
        #expect(descriptor.hasLongPictureID)
        #expect(descriptor.tl0PictureIndex == 0xFE)
        #expect(descriptor.temporalLayerID == 2)
        #expect(descriptor.isLayerSync)
        #expect(descriptor.keyIndex == 17)
        #expect(descriptor.length == 6)
        #expect(!descriptor.isKeyFrame(payload: payload))
        #expect(descriptor.payloadHeader(payload: payload)?.isKeyFrame == false)
    }

    @Test func minimalAndPartialDescriptors() throws {
        let plain = try VP8PayloadDescriptor(parsing: VP8Vectors.plain)
        #expect(plain.length == 1 && plain.pictureID == nil && plain.isStartOfFrame)
        let nonReference = try VP8PayloadDescriptor(parsing: VP8Vectors.nonReference)
        #expect(nonReference.isNonReferenceFrame && nonReference.partitionIndex == 3 && !nonReference.isStartOfPartition)
        #expect(!nonReference.isKeyFrame(payload: VP8Vectors.nonReference[...]))
        let keyOnly = try VP8PayloadDescriptor(parsing: VP8Vectors.keyIndexOnly)
        #expect(keyOnly.keyIndex == 5 && keyOnly.temporalLayerID == nil && !keyOnly.isLayerSync)
        let tl0 = try VP8PayloadDescriptor(parsing: VP8Vectors.tl0Only)
        #expect(tl0.tl0PictureIndex == 9 && tl0.length == 3)
    }

    @Test func everyTruncationIsRefused() {
        for vector in VP8Vectors.all {
            let descriptorLength = (try? VP8PayloadDescriptor(parsing: vector))?.length ?? 0
            for prefix in truncations(of: vector) where prefix.count <= descriptorLength {
                #expect(throws: RTPParseError.self, "\(prefix)") { try VP8PayloadDescriptor(parsing: prefix) }
            }
        }
    }

    @Test func keyFrameWithoutStartCodeIsNotAHeader() throws {
        var payload = VP8Vectors.shortPictureIDKeyFrame
        payload[6] = 0x00  // break the 9d 01 2a start code
        let descriptor = try VP8PayloadDescriptor(parsing: payload)
        #expect(descriptor.payloadHeader(payload: payload[...]) == nil)
        #expect(throws: RTPParseError.malformedPayloadDescriptor) {
            try VP8PayloadHeader(parsing: Array(payload[3...])[...])
        }
        #expect(throws: RTPParseError.malformedPayloadDescriptor) { try VP8PayloadHeader(parsing: [0x00, 0x01][...]) }
    }

    @Test func rewritesFifteenBitPictureIDAcrossTheWrap() throws {
        let rtpHeaderLength = 12
        var packet = Array(RTPVectors.minimal.prefix(rtpHeaderLength)) + VP8Vectors.longPictureIDAllFields
        let payload = packet[rtpHeaderLength...]
        let descriptor = try VP8PayloadDescriptor(parsing: payload)
        let next = VP8PayloadDescriptor.nextPictureID(after: descriptor.pictureID!, long: true)
        #expect(next == 0)
        #expect(descriptor.rewritePictureID(next, in: &packet, payloadOffset: rtpHeaderLength))
        #expect(try VP8PayloadDescriptor(parsing: packet[rtpHeaderLength...]).pictureID == 0)
        // A value past 15 bits is written modulo 2^15, and the M bit stays set.
        #expect(descriptor.rewritePictureID(0x8001, in: &packet, payloadOffset: rtpHeaderLength))
        let rewritten = try VP8PayloadDescriptor(parsing: packet[rtpHeaderLength...])
        #expect(rewritten.pictureID == 1 && rewritten.hasLongPictureID)
        #expect(descriptor.rewriteTL0PictureIndex(0xFF &+ 1, in: &packet, payloadOffset: rtpHeaderLength))
        #expect(descriptor.rewriteKeyIndex(33, in: &packet, payloadOffset: rtpHeaderLength))
        let final = try VP8PayloadDescriptor(parsing: packet[rtpHeaderLength...])
        #expect(final.tl0PictureIndex == 0)
        #expect(final.keyIndex == 1)
        #expect(final.temporalLayerID == 2 && final.isLayerSync)  // TID and Y kept
        #expect(Array(packet[(rtpHeaderLength + 6)...]) == Array(VP8Vectors.longPictureIDAllFields[6...]))
    }

    @Test func rewritesSevenBitPictureIDAcrossTheWrap() throws {
        var payload = VP8Vectors.shortPictureIDKeyFrame
        let descriptor = try VP8PayloadDescriptor(parsing: payload)
        #expect(VP8PayloadDescriptor.nextPictureID(after: 0x7F, long: false) == 0)
        #expect(descriptor.rewritePictureID(0x7F, in: &payload, payloadOffset: 0))
        #expect(try VP8PayloadDescriptor(parsing: payload).pictureID == 0x7F)
        #expect(descriptor.rewritePictureID(0x80, in: &payload, payloadOffset: 0))
        let wrapped = try VP8PayloadDescriptor(parsing: payload)
        #expect(wrapped.pictureID == 0 && !wrapped.hasLongPictureID)
        #expect(wrapped.isKeyFrame(payload: payload[...]))
    }

    @Test func rewritingAbsentFieldsChangesNothing() throws {
        var payload = VP8Vectors.plain
        let descriptor = try VP8PayloadDescriptor(parsing: payload)
        #expect(!descriptor.rewritePictureID(1, in: &payload, payloadOffset: 0))
        #expect(!descriptor.rewriteTL0PictureIndex(1, in: &payload, payloadOffset: 0))
        #expect(!descriptor.rewriteKeyIndex(1, in: &payload, payloadOffset: 0))
        var tl0Payload = VP8Vectors.tl0Only
        let tl0 = try VP8PayloadDescriptor(parsing: tl0Payload)
        #expect(!tl0.rewriteTL0PictureIndex(1, in: &tl0Payload, payloadOffset: 5))  // out of range
        #expect(payload == VP8Vectors.plain && tl0Payload == VP8Vectors.tl0Only)
    }
}

@Suite("VP8 rewriting with wrong offsets")
struct VP8RewriteOffsetTests {
    @Test(arguments: [Int.min, -1, 8, 11, Int.max])  // the fields end at 4, 5 and 6 of 11 bytes
    func outOfRangeOffsetsChangeNothing(_ offset: Int) throws {
        var payload = VP8Vectors.longPictureIDAllFields
        let descriptor = try VP8PayloadDescriptor(parsing: payload)
        #expect(!descriptor.rewritePictureID(1, in: &payload, payloadOffset: offset))
        #expect(!descriptor.rewriteTL0PictureIndex(1, in: &payload, payloadOffset: offset))
        #expect(!descriptor.rewriteKeyIndex(1, in: &payload, payloadOffset: offset))
        #expect(payload == VP8Vectors.longPictureIDAllFields)
    }
}
