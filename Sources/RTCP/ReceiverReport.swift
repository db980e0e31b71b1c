import ChorusCore

/// An RTCP receiver report, RR (RFC 3550 §6.4.2): the reporter's SSRC and up to 31 reception
/// report blocks, sent by participants that are not (or not only) senders.
///
/// ```
/// |V=2|P|    RC   |   PT=RR=201   |             length            |
/// |                     SSRC of packet sender                     |
/// |                 report blocks (RC × 24 bytes)                 |
/// |                  profile-specific extensions                  |
/// ```
///
/// Chorus reads clients' RRs to learn loss and RTT on what it sends them, and sends RRs for the
/// streams it receives. An RR with no blocks is the minimal compound head (RFC 3550 §6.1).
public struct ReceiverReport: Sendable, Equatable {
    public static let maximumReportBlocks = 31

    public var ssrc: SSRC
    public var reportBlocks: RTCPItemList<ReportBlock>
    public var profileExtension: ArraySlice<UInt8>

    public init(ssrc: SSRC, reportBlocks: RTCPItemList<ReportBlock> = [], profileExtension: ArraySlice<UInt8> = []) {
        self.ssrc = ssrc
        self.reportBlocks = reportBlocks
        self.profileExtension = profileExtension
    }

    /// `packet` holds exactly one RR.
    public init(parsing packet: ArraySlice<UInt8>) throws(RTCPParseError) {
        let frame = try RTCPPacketFrame(packet, type: .receiverReport)
        let body = frame.body
        guard body.count >= 4 else { throw .truncated }
        ssrc = SSRC(body.uint32(at: 0))
        let rest = body.bytes(at: 4, count: body.count - 4)
        (reportBlocks, profileExtension) = try ReportBlockSection.parse(rest, count: Int(frame.header.count))
    }

    public init(parsing packet: [UInt8]) throws(RTCPParseError) {
        try self.init(parsing: packet[...])
    }

    public func serialize(into out: inout [UInt8]) throws(RTCPSerializationError) {
        try ReportBlockSection.validate(reportBlocks, profileExtension, limit: Self.maximumReportBlocks)
        let bodyLength = 4 + reportBlocks.bytes.count + profileExtension.count
        try out.appendRTCPPacket(type: .receiverReport, count: UInt8(reportBlocks.count), bodyLength: bodyLength) {
            writer in
            writer.put32(ssrc.rawValue)
            writer.put(contentsOf: reportBlocks.bytes)
            writer.put(contentsOf: profileExtension)
        }
    }
}
