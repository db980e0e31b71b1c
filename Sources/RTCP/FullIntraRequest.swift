import ChorusCore

/// A Full Intra Request, FIR (RFC 5104 §4.3.1): payload-specific feedback (PT=206, FMT=4)
/// asking each listed media sender for a key frame. The "SSRC of media source" field is unused
/// (0); the targets are in the FCI, each with a command sequence number that the requester
/// increments per new request so that retransmitted FIRs are not acted on twice.
///
/// ```
/// |                              SSRC                             |
/// | Seq nr.       |    Reserved                                   |   × n ≥ 1
/// ```
public struct FullIntraRequest: Sendable, Equatable {
    public static let format: UInt8 = 4

    /// One FCI entry: the media sender asked for a key frame and the request's number.
    public struct Entry: RTCPFixedSizeItem, Hashable {
        public static var encodedLength: Int { 8 }

        public var ssrc: SSRC
        public var sequenceNumber: UInt8

        public init(ssrc: SSRC, sequenceNumber: UInt8) {
            self.ssrc = ssrc
            self.sequenceNumber = sequenceNumber
        }

        public init(decoding bytes: ArraySlice<UInt8>) {
            ssrc = SSRC(bytes.uint32(at: 0))
            sequenceNumber = bytes.byte(at: 4)
        }

        public func encode(appendingTo bytes: inout [UInt8]) {
            bytes.appendWriting(count: 8) { writer in
                writer.put32(ssrc.rawValue)
                writer.put(sequenceNumber)
                writer.putZeros(3)
            }
        }
    }

    public var senderSSRC: SSRC
    /// Unused by FIR; RFC 5104 says to set it to 0.
    public var mediaSSRC: SSRC
    public var entries: RTCPItemList<Entry>

    public init(senderSSRC: SSRC, mediaSSRC: SSRC = SSRC(0), entries: RTCPItemList<Entry>) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.entries = entries
    }

    /// `packet` holds exactly one FIR.
    public init(parsing packet: ArraySlice<UInt8>) throws(RTCPParseError) {
        let frame = try FeedbackFrame(packet, type: .payloadSpecificFeedback, format: Self.format)
        guard !frame.fci.isEmpty, frame.fci.count % Entry.encodedLength == 0 else { throw .malformedBody }
        senderSSRC = frame.senderSSRC
        mediaSSRC = frame.mediaSSRC
        entries = RTCPItemList(wire: frame.fci)
    }

    public init(parsing packet: [UInt8]) throws(RTCPParseError) {
        try self.init(parsing: packet[...])
    }

    public func serialize(into out: inout [UInt8]) throws(RTCPSerializationError) {
        guard !entries.isEmpty else { throw .empty }
        try out.appendFeedback(
            type: .payloadSpecificFeedback, format: Self.format, senderSSRC: senderSSRC, mediaSSRC: mediaSSRC,
            fciLength: entries.bytes.count
        ) { writer in writer.put(contentsOf: entries.bytes) }
    }
}
