import ChorusCore

/// The common layout of RTCP feedback messages (RFC 4585 §6.1), shared by NACK, PLI, FIR, REMB
/// and transport-cc:
///
/// ```
/// |V=2|P|   FMT   |       PT      |          length               |
/// |                  SSRC of packet sender                        |
/// |                  SSRC of media source                         |
/// :            Feedback Control Information (FCI)                 :
/// ```
struct FeedbackFrame {
    let header: RTCPHeader
    let senderSSRC: SSRC
    let mediaSSRC: SSRC
    /// The FCI, without padding.
    let fci: ArraySlice<UInt8>

    init(_ packet: ArraySlice<UInt8>, type: RTCPPacketType, format: UInt8) throws(RTCPParseError) {
        let frame = try RTCPPacketFrame(packet, type: type, format: format)
        guard frame.body.count >= 8 else { throw .truncated }
        header = frame.header
        senderSSRC = SSRC(frame.body.uint32(at: 0))
        mediaSSRC = SSRC(frame.body.uint32(at: 4))
        fci = frame.body.bytes(at: 8, count: frame.body.count - 8)
    }
}

extension Array where Element == UInt8 {
    /// Appends a feedback message whose FCI (`fciLength` bytes, whole words) `fci` writes.
    mutating func appendFeedback(
        type: RTCPPacketType, format: UInt8, senderSSRC: SSRC, mediaSSRC: SSRC, fciLength: Int,
        _ fci: (inout ByteWriter) -> Void
    ) throws(RTCPSerializationError) {
        try appendRTCPPacket(type: type, count: format, bodyLength: 8 + fciLength) { writer in
            writer.put32(senderSSRC.rawValue)
            writer.put32(mediaSSRC.rawValue)
            fci(&writer)
        }
    }
}
