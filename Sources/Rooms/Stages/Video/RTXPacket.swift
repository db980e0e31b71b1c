import ChorusCore
import RTCP
import RTP

/// The RTP and RTCP the video router writes beside forwarded media: RTX packets (RFC 4588) and
/// feedback compounds. Pure functions over bytes; malformed input gives nil, never a trap.
enum RTXPacket {
    /// A feedback message behind an empty receiver report: a compound packet any receiver
    /// accepts, reduced-size or not (RFC 3550 §6.1, RFC 5506).
    static func feedbackCompound(
        sender: SSRC, _ body: (inout [UInt8]) throws(RTCPSerializationError) -> Void
    ) -> [UInt8]? {
        var out: [UInt8] = []
        do {
            try ReceiverReport(ssrc: sender, reportBlocks: RTCPItemList([])).serialize(into: &out)
            try body(&out)
        } catch {
            return nil
        }
        return out
    }

    /// RFC 4588 §4: the RTX payload is the original sequence number then the original payload;
    /// the header takes the RTX stream's SSRC, payload type and sequence number.
    static func wrap(_ packet: inout [UInt8], ssrc: SSRC, payloadType: PayloadType, sequenceNumber: UInt16) {
        guard let header = try? RTPHeader(parsing: packet) else { return }
        let original = header.sequenceNumber
        RTPHeaderRewriter.setSSRC(ssrc, in: &packet)
        RTPHeaderRewriter.setPayloadType(payloadType, in: &packet)
        RTPHeaderRewriter.setSequenceNumber(sequenceNumber, in: &packet)
        packet.insert(contentsOf: [UInt8(truncatingIfNeeded: original >> 8), UInt8(truncatingIfNeeded: original)],
                      at: header.payloadRange.lowerBound)
    }

    /// The packet an RTX retransmission repairs: the original sequence number from the first
    /// two payload bytes, the primary SSRC and payload type; nil when malformed.
    static func unwrap(_ packet: [UInt8], header: RTPHeader, primary: SSRC, payloadType: UInt8)
        -> (packet: [UInt8], header: RTPHeader)?
    {
        let payload = header.payloadRange
        guard payload.count > 2, let type = PayloadType(payloadType) else { return nil }
        let original = packet.uint16(at: payload.lowerBound)
        var rebuilt = Array(packet[0..<payload.lowerBound])
        rebuilt[0] &= 0xDF  // the padding, if any, is not copied
        rebuilt.append(contentsOf: packet[(payload.lowerBound + 2)..<payload.upperBound])
        RTPHeaderRewriter.setSSRC(primary, in: &rebuilt)
        RTPHeaderRewriter.setPayloadType(type, in: &rebuilt)
        RTPHeaderRewriter.setSequenceNumber(original, in: &rebuilt)
        guard let header = try? RTPHeader(parsing: rebuilt) else { return nil }
        return (rebuilt, header)
    }
}
