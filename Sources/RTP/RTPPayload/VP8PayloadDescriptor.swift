/// The VP8 payload descriptor at the start of every VP8 RTP payload (RFC 7741 §4.2):
///
/// ```
///      0 1 2 3 4 5 6 7
///     +-+-+-+-+-+-+-+-+
///     |X|R|N|S|R| PID | (REQUIRED)
///     +-+-+-+-+-+-+-+-+
/// X:  |I|L|T|K| RSV   | (OPTIONAL)
///     +-+-+-+-+-+-+-+-+
/// I:  |M| PictureID   | (OPTIONAL; M=1: 15-bit picture ID, second byte follows)
///     +-+-+-+-+-+-+-+-+
/// L:  |   TL0PICIDX   | (OPTIONAL)
///     +-+-+-+-+-+-+-+-+
/// T/K:|TID|Y| KEYIDX  | (OPTIONAL)
///     +-+-+-+-+-+-+-+-+
/// ```
///
/// The video forwarder parses it from each VP8 packet to decide (temporal layer, frame start,
/// keyframe) and then rewrites picture ID, TL0PICIDX and KEYIDX in place so that a receiver sees
/// one continuous stream when the forwarder switches sources. Offsets are relative to the start
/// of the RTP payload; the rewrite functions take the payload's offset in the packet buffer.
/// Parsing never allocates or traps: truncated or empty payloads throw `RTPParseError`.
/// A sender builds one from its fields and writes it in front of each chunk of a frame
/// (`init(isStartOfPartition:…)`, `write(into:)`): the load generator's camera does.
public struct VP8PayloadDescriptor: Sendable, Equatable {
    /// N: the frame can be discarded without affecting other frames.
    public let isNonReferenceFrame: Bool
    /// S: the packet starts a VP8 partition.
    public let isStartOfPartition: Bool
    /// PID: the partition index, 0…7.
    public let partitionIndex: UInt8
    /// The picture ID, 7 or 15 bits; nil when I is clear.
    public let pictureID: UInt16?
    /// True when the picture ID uses the 15-bit form (M bit set).
    public let hasLongPictureID: Bool
    /// TL0PICIDX: running index of the base temporal layer frames; nil when L is clear.
    public let tl0PictureIndex: UInt8?
    /// TID: temporal layer index, 0…3; nil when T is clear.
    public let temporalLayerID: UInt8?
    /// Y: layer sync bit, meaningful only when T is set.
    public let isLayerSync: Bool
    /// KEYIDX: running index of key frames, 0…31; nil when K is clear.
    public let keyIndex: UInt8?
    /// Bytes taken by the descriptor; the VP8 payload starts right after it.
    public let length: Int

    let pictureIDOffset: Int?
    let tl0PictureIndexOffset: Int?
    let temporalKeyOffset: Int?

    /// True for the first packet of a frame: start of partition 0.
    public var isStartOfFrame: Bool { isStartOfPartition && partitionIndex == 0 }

    /// Parses the descriptor at the start of `payload` (an RTP payload). Throws when the
    /// descriptor is cut short or no VP8 data follows it.
    public init(parsing payload: ArraySlice<UInt8>) throws(RTPParseError) {
        var reader = FieldReader(payload: payload)
        let first = try reader.next()
        isNonReferenceFrame = first & 0x20 != 0
        isStartOfPartition = first & 0x10 != 0
        partitionIndex = first & 0x07
        let extensions = first & 0x80 != 0 ? try reader.next() : 0
        // I: picture ID, 7 or 15 bits.
        if extensions & 0x80 != 0 {
            pictureIDOffset = reader.offset
            let high = try reader.next()
            hasLongPictureID = high & 0x80 != 0
            pictureID = hasLongPictureID ? UInt16(high & 0x7F) << 8 | UInt16(try reader.next()) : UInt16(high)
        } else {
            (pictureIDOffset, pictureID, hasLongPictureID) = (nil, nil, false)
        }
        // L: TL0PICIDX.
        tl0PictureIndexOffset = extensions & 0x40 != 0 ? reader.offset : nil
        tl0PictureIndex = extensions & 0x40 != 0 ? try reader.next() : nil
        // T and K share one byte: TID(2) Y(1) KEYIDX(5); each part is valid only with its bit.
        let hasTemporal = extensions & 0x20 != 0
        let hasKeyIndex = extensions & 0x10 != 0
        temporalKeyOffset = hasTemporal || hasKeyIndex ? reader.offset : nil
        let temporalKey = hasTemporal || hasKeyIndex ? try reader.next() : 0
        temporalLayerID = hasTemporal ? temporalKey >> 6 : nil
        isLayerSync = hasTemporal && temporalKey & 0x20 != 0
        keyIndex = hasKeyIndex ? temporalKey & 0x1F : nil
        // A descriptor alone carries no video; libwebrtc refuses such packets too.
        guard payload.count > reader.offset else { throw .emptyPayload }
        length = reader.offset
    }

    /// Reads descriptor bytes one at a time; running out means the descriptor is cut short.
    private struct FieldReader {
        let payload: ArraySlice<UInt8>
        var offset = 0

        mutating func next() throws(RTPParseError) -> UInt8 {
            guard offset < payload.count else {
                throw offset == 0 ? .emptyPayload : .malformedPayloadDescriptor
            }
            defer { offset += 1 }
            return payload.byte(at: offset)
        }
    }

    public init(parsing payload: [UInt8]) throws(RTPParseError) {
        try self.init(parsing: payload[...])
    }

    /// True when this packet starts a key frame: the start of partition 0 whose VP8 payload
    /// header has P = 0 (RFC 7741 §4.3). `payload` is the RTP payload this was parsed from.
    public func isKeyFrame(payload: ArraySlice<UInt8>) -> Bool {
        guard isStartOfFrame, payload.count > length else { return false }
        return payload.byte(at: length) & 0x01 == 0
    }

    /// The VP8 payload header at the start of the frame, nil when this packet does not start a
    /// frame or the header is malformed.
    public func payloadHeader(payload: ArraySlice<UInt8>) -> VP8PayloadHeader? {
        guard isStartOfFrame, payload.count > length else { return nil }
        return try? VP8PayloadHeader(parsing: payload[(payload.startIndex + length)...])
    }

    // MARK: In-place rewriting

    /// Writes `pictureID` in the descriptor's existing picture ID field, keeping its width: a
    /// 15-bit field takes the value modulo 2^15 (M bit kept set), a 7-bit one modulo 2^7.
    /// Returns false when the descriptor has no picture ID or the buffer is too short.
    @discardableResult
    public func rewritePictureID<Bytes: MutableCollection<UInt8>>(
        _ pictureID: UInt16, in packet: inout Bytes, payloadOffset: Int
    ) -> Bool where Bytes.Index == Int {
        let width = hasLongPictureID ? 2 : 1
        guard let field = pictureIDOffset, Self.fits(field, width: width, at: payloadOffset, in: packet.count) else {
            return false
        }
        let index = packet.startIndex + payloadOffset + field
        if hasLongPictureID {
            packet[index] = 0x80 | UInt8(truncatingIfNeeded: pictureID >> 8) & 0x7F
            packet[index + 1] = UInt8(truncatingIfNeeded: pictureID)
        } else {
            packet[index] = UInt8(truncatingIfNeeded: pictureID) & 0x7F
        }
        return true
    }

    /// Writes TL0PICIDX in place; false when the descriptor has none.
    @discardableResult
    public func rewriteTL0PictureIndex<Bytes: MutableCollection<UInt8>>(
        _ value: UInt8, in packet: inout Bytes, payloadOffset: Int
    ) -> Bool where Bytes.Index == Int {
        guard let field = tl0PictureIndexOffset, Self.fits(field, width: 1, at: payloadOffset, in: packet.count) else {
            return false
        }
        packet[packet.startIndex + payloadOffset + field] = value
        return true
    }

    /// Writes KEYIDX (modulo 32) in place, keeping TID and Y; false when K is clear.
    @discardableResult
    public func rewriteKeyIndex<Bytes: MutableCollection<UInt8>>(
        _ value: UInt8, in packet: inout Bytes, payloadOffset: Int
    ) -> Bool where Bytes.Index == Int {
        guard keyIndex != nil, let field = temporalKeyOffset,
            Self.fits(field, width: 1, at: payloadOffset, in: packet.count)
        else { return false }
        let index = packet.startIndex + payloadOffset + field
        packet[index] = packet[index] & 0xE0 | value & 0x1F
        return true
    }

    /// True when `width` bytes at `field` of a payload starting at `payloadOffset` lie inside a
    /// buffer of `count` bytes; written so that no offset, however wrong, can overflow.
    private static func fits(_ field: Int, width: Int, at payloadOffset: Int, in count: Int) -> Bool {
        payloadOffset >= 0 && payloadOffset <= count - field - width
    }

    /// The picture ID that follows `pictureID` in a field of the given width, wrapping at
    /// 0x7F or 0x7FFF as receivers expect.
    public static func nextPictureID(after pictureID: UInt16, long: Bool) -> UInt16 {
        (pictureID &+ 1) & (long ? 0x7FFF : 0x7F)
    }
}

/// The 3-byte VP8 payload header at the start of a frame's first partition (RFC 7741 §4.3,
/// RFC 6386 §9.1), plus the 7-byte key frame start (start code and dimensions) when P = 0.
/// The forwarder reads it to learn a key frame's resolution for layer selection.
public struct VP8PayloadHeader: Sendable, Equatable {
    /// P bit clear.
    public let isKeyFrame: Bool
    /// VER: the 3-bit version (decoding profile).
    public let version: UInt8
    /// H: show_frame.
    public let showFrame: Bool
    /// Size of the first partition in bytes (19 bits).
    public let firstPartitionSize: UInt32
    /// Key frames only: width and height in pixels (14 bits each) and their 2-bit scales.
    public let width: UInt16?
    public let height: UInt16?
    public let horizontalScale: UInt8?
    public let verticalScale: UInt8?

    static let keyFrameStartCode: (UInt8, UInt8, UInt8) = (0x9D, 0x01, 0x2A)

    /// `data` starts at the VP8 payload (after the descriptor). Throws when shorter than the
    /// header, or for a key frame without its start code and dimensions.
    public init(parsing data: ArraySlice<UInt8>) throws(RTPParseError) {
        guard data.count >= 3 else { throw .malformedPayloadDescriptor }
        let first = data.byte(at: 0)
        isKeyFrame = first & 0x01 == 0
        version = (first >> 1) & 0x07
        showFrame = first & 0x10 != 0
        firstPartitionSize = UInt32(first >> 5) | UInt32(data.byte(at: 1)) << 3 | UInt32(data.byte(at: 2)) << 11
        guard isKeyFrame else {
            (width, height, horizontalScale, verticalScale) = (nil, nil, nil, nil)
            return
        }
        guard data.count >= 10, data.byte(at: 3) == Self.keyFrameStartCode.0,
            data.byte(at: 4) == Self.keyFrameStartCode.1, data.byte(at: 5) == Self.keyFrameStartCode.2
        else { throw .malformedPayloadDescriptor }
        // Little-endian 16-bit fields: 14 bits of size, 2 bits of scale.
        let rawWidth = UInt16(data.byte(at: 6)) | UInt16(data.byte(at: 7)) << 8
        let rawHeight = UInt16(data.byte(at: 8)) | UInt16(data.byte(at: 9)) << 8
        width = rawWidth & 0x3FFF
        horizontalScale = UInt8(rawWidth >> 14)
        height = rawHeight & 0x3FFF
        verticalScale = UInt8(rawHeight >> 14)
    }
}

// MARK: Writing (RFC 7741 §4.2)

extension VP8PayloadDescriptor {
    /// A descriptor to put in front of a VP8 payload, as a sender writes it (the load
    /// generator's camera). Each optional field is present when given, and X is set when any of
    /// I, L, T or K is. Values are cut to their field's width (PID 3 bits, picture ID 7 bits, or
    /// 15 with `hasLongPictureID` (M), TID 2, KEYIDX 5), and Y counts only with a TID, as the
    /// parser reads them: what `write(into:)` emits parses back to an equal value.
    public init(isNonReferenceFrame: Bool = false, isStartOfPartition: Bool, partitionIndex: UInt8 = 0,
                pictureID: UInt16? = nil, hasLongPictureID: Bool = true, tl0PictureIndex: UInt8? = nil,
                temporalLayerID: UInt8? = nil, isLayerSync: Bool = false, keyIndex: UInt8? = nil) {
        self.isNonReferenceFrame = isNonReferenceFrame
        self.isStartOfPartition = isStartOfPartition
        self.partitionIndex = partitionIndex & 0x07
        self.hasLongPictureID = pictureID != nil && hasLongPictureID
        self.pictureID = pictureID.map { $0 & (hasLongPictureID ? 0x7FFF : 0x7F) }
        self.tl0PictureIndex = tl0PictureIndex
        self.temporalLayerID = temporalLayerID.map { $0 & 0x03 }
        self.isLayerSync = temporalLayerID != nil && isLayerSync
        self.keyIndex = keyIndex.map { $0 & 0x1F }
        // The same offsets the parser records: the required byte, X's byte, then each field.
        var offset = 1
        if pictureID != nil || tl0PictureIndex != nil || temporalLayerID != nil || keyIndex != nil { offset += 1 }
        pictureIDOffset = pictureID == nil ? nil : offset
        if pictureID != nil { offset += self.hasLongPictureID ? 2 : 1 }
        tl0PictureIndexOffset = tl0PictureIndex == nil ? nil : offset
        if tl0PictureIndex != nil { offset += 1 }
        temporalKeyOffset = temporalLayerID == nil && keyIndex == nil ? nil : offset
        if temporalKeyOffset != nil { offset += 1 }
        length = offset
    }

    /// Appends the descriptor's `length` bytes to `out`; the VP8 payload goes right after.
    public func write(into out: inout [UInt8]) {
        let hasExtensions = length > 1
        out.append((hasExtensions ? 0x80 : 0) | (isNonReferenceFrame ? 0x20 : 0) | (isStartOfPartition ? 0x10 : 0)
            | partitionIndex)
        guard hasExtensions else { return }
        let hasTemporalKey = temporalLayerID != nil || keyIndex != nil
        out.append((pictureID != nil ? 0x80 : 0) | (tl0PictureIndex != nil ? 0x40 : 0)
            | (temporalLayerID != nil ? 0x20 : 0) | (keyIndex != nil ? 0x10 : 0))
        if let pictureID {
            if hasLongPictureID {
                out.append(0x80 | UInt8(truncatingIfNeeded: pictureID >> 8))
                out.append(UInt8(truncatingIfNeeded: pictureID))
            } else {
                out.append(UInt8(truncatingIfNeeded: pictureID))
            }
        }
        if let tl0PictureIndex { out.append(tl0PictureIndex) }
        if hasTemporalKey {
            out.append((temporalLayerID ?? 0) << 6 | (isLayerSync ? 0x20 : 0) | (keyIndex ?? 0))
        }
    }

    /// The descriptor's bytes alone.
    public func serialize() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(length)
        write(into: &out)
        return out
    }
}
