import ChorusCore

/// One RTCP packet of a compound, decoded into the message it carries. The compound iterator
/// yields these; the owner (the participant's transport) switches over them. Unknown types and
/// feedback formats pass through as `.unknown` with their bytes; a known message whose body is
/// inconsistent becomes `.malformed`, so one bad packet does not hide the rest of the datagram.
public enum RTCPPacket: Sendable, Equatable {
    case senderReport(SenderReport)
    case receiverReport(ReceiverReport)
    case sourceDescription(SourceDescription)
    case goodbye(Goodbye)
    case genericNACK(GenericNACK)
    case pictureLossIndication(PictureLossIndication)
    case fullIntraRequest(FullIntraRequest)
    case receiverEstimatedMaximumBitrate(ReceiverEstimatedMaximumBitrate)
    case transportFeedback(TransportFeedback)
    /// A type or feedback format Chorus does not decode (APP, XR, TMMBR, …): the whole packet.
    case unknown(type: RTCPPacketType, format: UInt8, packet: ArraySlice<UInt8>)
    /// A known type whose contents do not parse.
    case malformed(type: RTCPPacketType, format: UInt8, error: RTCPParseError)

    /// Decodes `packet`, which holds exactly one RTCP packet. Throws when its header, length or
    /// padding are wrong or its body does not parse as the message its type names.
    public init(parsing packet: ArraySlice<UInt8>) throws(RTCPParseError) {
        let header = try RTCPHeader(parsing: packet)
        switch (header.packetType, header.count) {
        case (.senderReport, _): self = .senderReport(try SenderReport(parsing: packet))
        case (.receiverReport, _): self = .receiverReport(try ReceiverReport(parsing: packet))
        case (.sourceDescription, _): self = .sourceDescription(try SourceDescription(parsing: packet))
        case (.goodbye, _): self = .goodbye(try Goodbye(parsing: packet))
        case (.transportLayerFeedback, GenericNACK.format): self = .genericNACK(try GenericNACK(parsing: packet))
        case (.transportLayerFeedback, TransportFeedback.format):
            self = .transportFeedback(try TransportFeedback(parsing: packet))
        case (.payloadSpecificFeedback, PictureLossIndication.format):
            self = .pictureLossIndication(try PictureLossIndication(parsing: packet))
        case (.payloadSpecificFeedback, FullIntraRequest.format):
            self = .fullIntraRequest(try FullIntraRequest(parsing: packet))
        case (.payloadSpecificFeedback, ReceiverEstimatedMaximumBitrate.format) where Self.carriesREMB(packet):
            self = .receiverEstimatedMaximumBitrate(try ReceiverEstimatedMaximumBitrate(parsing: packet))
        default:
            _ = try RTCPPacketFrame(packet)  // still check length and padding
            self = .unknown(type: header.packetType, format: header.count, packet: packet)
        }
    }

    public init(parsing packet: [UInt8]) throws(RTCPParseError) {
        try self.init(parsing: packet[...])
    }

    /// Application-layer feedback is REMB only when its FCI starts with "REMB".
    private static func carriesREMB(_ packet: ArraySlice<UInt8>) -> Bool {
        guard packet.count >= 16 else { return true }  // too short: let the REMB parser say why
        return ReceiverEstimatedMaximumBitrate.isREMB(fci: packet.bytes(at: 12, count: packet.count - 12))
    }
}
