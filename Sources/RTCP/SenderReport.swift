import ChorusCore

/// An RTCP sender report, SR (RFC 3550 §6.4.1): the sender's wall-clock/RTP-clock pair and
/// packet and octet counts, then up to 31 reception report blocks.
///
/// ```
/// |V=2|P|    RC   |   PT=SR=200   |             length            |
/// |                         SSRC of sender                        |
/// |              NTP timestamp, most significant word             |
/// |             NTP timestamp, least significant word             |
/// |                         RTP timestamp                         |
/// |                     sender's packet count                     |
/// |                      sender's octet count                     |
/// |                 report blocks (RC × 24 bytes)                 |
/// |                  profile-specific extensions                  |
/// ```
///
/// Receivers use it for lip sync and RTT; Chorus sends one per outgoing stream. Parsed report
/// blocks stay in wire form in the datagram (see `RTCPItemList`).
public struct SenderReport: Sendable, Equatable {
    public static let maximumReportBlocks = 31

    public var ssrc: SSRC
    public var ntpTimestamp: NTPTimestamp
    /// The RTP timestamp that corresponds to `ntpTimestamp` on the stream's media clock.
    public var rtpTimestamp: UInt32
    public var packetCount: UInt32
    public var octetCount: UInt32
    public var reportBlocks: RTCPItemList<ReportBlock>
    /// Bytes after the report blocks, kept opaque.
    public var profileExtension: ArraySlice<UInt8>

    public init(
        ssrc: SSRC, ntpTimestamp: NTPTimestamp, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32,
        reportBlocks: RTCPItemList<ReportBlock> = [], profileExtension: ArraySlice<UInt8> = []
    ) {
        self.ssrc = ssrc
        self.ntpTimestamp = ntpTimestamp
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
        self.reportBlocks = reportBlocks
        self.profileExtension = profileExtension
    }

    /// `packet` holds exactly one SR.
    public init(parsing packet: ArraySlice<UInt8>) throws(RTCPParseError) {
        let frame = try RTCPPacketFrame(packet, type: .senderReport)
        let body = frame.body
        guard body.count >= 24 else { throw .truncated }
        ssrc = SSRC(body.uint32(at: 0))
        ntpTimestamp = NTPTimestamp(rawValue: UInt64(body.uint32(at: 4)) << 32 | UInt64(body.uint32(at: 8)))
        rtpTimestamp = body.uint32(at: 12)
        packetCount = body.uint32(at: 16)
        octetCount = body.uint32(at: 20)
        let rest = body.bytes(at: 24, count: body.count - 24)
        (reportBlocks, profileExtension) = try ReportBlockSection.parse(rest, count: Int(frame.header.count))
    }

    public init(parsing packet: [UInt8]) throws(RTCPParseError) {
        try self.init(parsing: packet[...])
    }

    /// Appends the SR to `out` (e.g. the first packet of a compound being built).
    public func serialize(into out: inout [UInt8]) throws(RTCPSerializationError) {
        try ReportBlockSection.validate(reportBlocks, profileExtension, limit: Self.maximumReportBlocks)
        let bodyLength = 24 + reportBlocks.bytes.count + profileExtension.count
        try out.appendRTCPPacket(type: .senderReport, count: UInt8(reportBlocks.count), bodyLength: bodyLength) {
            writer in
            writer.put32(ssrc.rawValue)
            writer.put32(ntpTimestamp.seconds)
            writer.put32(ntpTimestamp.fraction)
            writer.put32(rtpTimestamp)
            writer.put32(packetCount)
            writer.put32(octetCount)
            writer.put(contentsOf: reportBlocks.bytes)
            writer.put(contentsOf: profileExtension)
        }
    }
}
