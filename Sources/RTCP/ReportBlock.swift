import ChorusCore

/// One reception report block (RFC 3550 §6.4.1), carried by sender and receiver reports:
///
/// ```
/// |                 SSRC_n (source identifier)                    |
/// | fraction lost |       cumulative number of packets lost       |
/// |           extended highest sequence number received           |
/// |                      interarrival jitter                      |
/// |                         last SR (LSR)                         |
/// |                   delay since last SR (DLSR)                  |
/// ```
///
/// The server reads these from clients to learn loss, jitter and round-trip time on its outgoing
/// streams, and fills them from its own receive statistics for the streams it receives.
public struct ReportBlock: RTCPFixedSizeItem, Hashable {
    public static var encodedLength: Int { 24 }
    /// The 24-bit signed range of "cumulative number of packets lost".
    public static let cumulativeLostRange: ClosedRange<Int32> = -0x80_0000...0x7F_FFFF

    /// The source this block reports on.
    public var ssrc: SSRC
    /// Fraction of packets lost since the last report, in 1/256.
    public var fractionLost: UInt8
    /// Packets expected minus packets received; negative with duplicates (24-bit signed).
    public var cumulativeLost: Int32
    /// Highest sequence number received, with the wrap count in the high 16 bits.
    public var extendedHighestSequenceNumber: UInt32
    /// Interarrival jitter in RTP timestamp units.
    public var jitter: UInt32
    /// Compact NTP of the last SR received from this source, 0 if none.
    public var lastSenderReport: UInt32
    /// Delay between receiving that SR and sending this block, in 1/65536 s.
    public var delaySinceLastSenderReport: UInt32

    /// `cumulativeLost` is clamped to the 24-bit field (RFC 3550 §6.4.1 says to clamp too).
    public init(
        ssrc: SSRC, fractionLost: UInt8 = 0, cumulativeLost: Int32 = 0, extendedHighestSequenceNumber: UInt32 = 0,
        jitter: UInt32 = 0, lastSenderReport: UInt32 = 0, delaySinceLastSenderReport: UInt32 = 0
    ) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = min(max(cumulativeLost, Self.cumulativeLostRange.lowerBound),
                                  Self.cumulativeLostRange.upperBound)
        self.extendedHighestSequenceNumber = extendedHighestSequenceNumber
        self.jitter = jitter
        self.lastSenderReport = lastSenderReport
        self.delaySinceLastSenderReport = delaySinceLastSenderReport
    }

    public init(decoding bytes: ArraySlice<UInt8>) {
        ssrc = SSRC(bytes.uint32(at: 0))
        fractionLost = bytes.byte(at: 4)
        // Sign-extend the 24-bit field by shifting it to the top and back.
        cumulativeLost = Int32(bitPattern: bytes.uint24(at: 5) << 8) >> 8
        extendedHighestSequenceNumber = bytes.uint32(at: 8)
        jitter = bytes.uint32(at: 12)
        lastSenderReport = bytes.uint32(at: 16)
        delaySinceLastSenderReport = bytes.uint32(at: 20)
    }

    public func encode(appendingTo bytes: inout [UInt8]) {
        let clamped = min(max(cumulativeLost, Self.cumulativeLostRange.lowerBound), Self.cumulativeLostRange.upperBound)
        bytes.appendWriting(count: Self.encodedLength) { writer in
            writer.put32(ssrc.rawValue)
            writer.put(fractionLost)
            writer.put24(UInt32(bitPattern: clamped) & 0xFF_FFFF)
            writer.put32(extendedHighestSequenceNumber)
            writer.put32(jitter)
            writer.put32(lastSenderReport)
            writer.put32(delaySinceLastSenderReport)
        }
    }
}
