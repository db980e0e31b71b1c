import ChorusCore

/// A Receiver Estimated Maximum Bitrate message, REMB (draft-alvestrand-rmcat-remb-03 §2.2):
/// application-layer feedback (PT=206, FMT=15) with the unique identifier "REMB", telling the
/// listed media senders the total bitrate the receiver estimates it can take.
///
/// ```
/// |  Unique identifier 'R' 'E' 'M' 'B'                            |
/// |  Num SSRC     | BR Exp    |  BR Mantissa                      |
/// |   SSRC feedback                                               |   × Num SSRC
/// ```
///
/// The bitrate is `mantissa × 2^exp` bits per second (18-bit mantissa, 6-bit exponent). Chorus
/// sends REMB to publishers to cap their uplink to what the room can forward.
public struct ReceiverEstimatedMaximumBitrate: Sendable, Equatable {
    public static let format: UInt8 = 15
    public static let identifier: [UInt8] = Array("REMB".utf8)
    public static let maximumSSRCs = 255

    public var senderSSRC: SSRC
    /// Unused; the draft says 0.
    public var mediaSSRC: SSRC
    /// Bits per second. Encoding rounds down to what 18 bits of mantissa can express.
    public var bitrate: UInt64
    /// The media senders the estimate applies to.
    public var ssrcs: RTCPItemList<SSRC>

    public init(senderSSRC: SSRC, mediaSSRC: SSRC = SSRC(0), bitrate: UInt64, ssrcs: RTCPItemList<SSRC>) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.bitrate = bitrate
        self.ssrcs = ssrcs
    }

    /// True when an application-layer feedback FCI starts with the REMB identifier.
    static func isREMB(fci: ArraySlice<UInt8>) -> Bool {
        fci.count >= 4 && fci.prefix(4).elementsEqual(identifier)
    }

    /// `packet` holds exactly one REMB.
    public init(parsing packet: ArraySlice<UInt8>) throws(RTCPParseError) {
        let frame = try FeedbackFrame(packet, type: .payloadSpecificFeedback, format: Self.format)
        let fci = frame.fci
        guard fci.count >= 8 else { throw .truncated }
        guard Self.isREMB(fci: fci) else { throw .malformedBody }
        let count = Int(fci.byte(at: 4))
        // Like libwebrtc, insist that Num SSRC describes the rest of the FCI exactly.
        guard fci.count == 8 + 4 * count else { throw .malformedBody }
        let exponent = fci.byte(at: 5) >> 2
        let mantissa = fci.uint24(at: 5) & 0x3_FFFF
        senderSSRC = frame.senderSSRC
        mediaSSRC = frame.mediaSSRC
        bitrate = Self.decode(exponent: exponent, mantissa: mantissa)
        ssrcs = RTCPItemList(wire: fci.bytes(at: 8, count: 4 * count))
    }

    public init(parsing packet: [UInt8]) throws(RTCPParseError) {
        try self.init(parsing: packet[...])
    }

    /// `mantissa << exponent`, saturating: a 6-bit exponent can push 18 bits past 64.
    public static func decode(exponent: UInt8, mantissa: UInt32) -> UInt64 {
        let value = UInt64(mantissa & 0x3_FFFF)
        guard value != 0 else { return 0 }
        let shift = UInt64(exponent & 0x3F)
        return UInt64(value.leadingZeroBitCount) >= shift ? value << shift : .max
    }

    /// The smallest exponent whose mantissa fits 18 bits; the mantissa is rounded down.
    public static func encode(bitrate: UInt64) -> (exponent: UInt8, mantissa: UInt32) {
        var exponent: UInt8 = 0
        while bitrate >> UInt64(exponent) > 0x3_FFFF { exponent += 1 }
        return (exponent, UInt32(truncatingIfNeeded: bitrate >> UInt64(exponent)))
    }

    public func serialize(into out: inout [UInt8]) throws(RTCPSerializationError) {
        guard ssrcs.count <= Self.maximumSSRCs else {
            throw .tooManyItems(count: ssrcs.count, limit: Self.maximumSSRCs)
        }
        let (exponent, mantissa) = Self.encode(bitrate: bitrate)
        try out.appendFeedback(
            type: .payloadSpecificFeedback, format: Self.format, senderSSRC: senderSSRC, mediaSSRC: mediaSSRC,
            fciLength: 8 + ssrcs.bytes.count
        ) { writer in
            writer.put(contentsOf: Self.identifier)
            writer.put(UInt8(ssrcs.count))
            writer.put24(UInt32(exponent) << 18 | mantissa)
            writer.put(contentsOf: ssrcs.bytes)
        }
    }
}
