import ChorusCore
import CongestionControl
import PeerTransport
import RTCP
import RTP

/// A member whose media is plain RTP and RTCP to and from one fixed address (RFC 3550, no
/// SRTP, no ICE): a phone's media once its call is set up, or a test member. Its datagrams are
/// routed by that address; it is established as soon as the room first polls it (the call was
/// set up before the member joined); what it sends is parsed once and handed on, what the room
/// sends it leaves as it is. It has no estimate of its path: the room then shares nothing it
/// cannot measure (a video slot stays on its lowest layer).
///
/// A class confined to the room's queue. Peer input never traps: what does not parse is a
/// counted drop.
public final class PlainRTPConnection: MemberConnection {
    /// Where the member's media comes from and goes to.
    public let remote: TransportAddress
    public let rtcpSSRC: SSRC
    public private(set) var counters = TransportCounters()
    private var announced = false
    public private(set) var nextDeadline: MediaTime

    /// `rtcpSSRC` is the SSRC of the mix stream the room sends the member.
    public init(remote: TransportAddress, rtcpSSRC: SSRC, now: MediaTime) {
        self.remote = remote
        self.rtcpSSRC = rtcpSSRC
        nextDeadline = now
    }

    /// Its one address, bound at join (and unbound with the member's other bound addresses).
    public func routes(joining: Bool, callId: CallID) -> [RoutingChange] {
        joining ? [.bind(remote, callId: callId)] : []
    }

    public func receive(_ datagram: [UInt8], from source: TransportAddress, now: MediaTime, transmits: inout [Transmit])
        -> Result<MemberSignal?, TransportDropReason>
    {
        guard source == remote else { return drop(.notValidated) }
        switch PacketClass(datagram) {
        case .rtp:
            guard let packet = try? RTPPacket(parsing: datagram) else { return drop(.malformed) }
            counters.packetsReceived &+= 1
            counters.bytesReceived &+= UInt64(datagram.count)
            return .success(.rtp(packet))
        case .rtcp:
            guard let compound = try? RTCPCompoundPacket(parsing: datagram) else { return drop(.malformed) }
            counters.rtcpReceived &+= 1
            return .success(.rtcp(compound))
        default:
            return drop(.unknownClass)
        }
    }

    private func drop(_ reason: TransportDropReason) -> Result<MemberSignal?, TransportDropReason> {
        counters.packetsDropped &+= 1
        return .failure(reason)
    }

    /// The first poll says the member is connected; there are no timers after it.
    public func poll(now: MediaTime, transmits: inout [Transmit]) -> MemberSignal? {
        guard !announced else { return nil }
        announced = true
        nextDeadline = MediaTime(nanoseconds: .max)
        return .connected(security: "none")
    }

    @discardableResult
    public func sendRTP(_ packet: [UInt8], reporting: ReportedPacket?, probeClusterID: Int?, now: MediaTime,
                        transmits: inout [Transmit]) -> Bool {
        transmits.append((packet, remote))
        counters.packetsSent &+= 1
        counters.bytesSent &+= UInt64(packet.count)
        return true
    }

    @discardableResult
    public func sendRTCP(_ compound: [UInt8], transmits: inout [Transmit]) -> Bool {
        transmits.append((compound, remote))
        counters.rtcpSent &+= 1
        return true
    }

    /// RTCP BYE for the room's streams toward the member (RFC 3550 §6.6).
    public func close(sources: [SSRC], now: MediaTime, transmits: inout [Transmit]) {
        var compound: [UInt8] = []
        guard let goodbye = Goodbye(sources: RTCPItemList(Array(sources.prefix(Goodbye.maximumSources)))),
              (try? ReceiverReport(ssrc: rtcpSSRC, reportBlocks: RTCPItemList([])).serialize(into: &compound)) != nil,
              (try? goodbye.serialize(into: &compound)) != nil
        else { return }
        sendRTCP(compound, transmits: &transmits)
    }

    public func receivedSenderReport(_ report: SenderReport) {}
    public func receivedReportBlock(_ block: ReportBlock, now: MediaTime) {}
    public func receivedTransportFeedback(_ feedback: TransportFeedback, now: MediaTime) {}
    public var bandwidthEstimate: BandwidthEstimate? { nil }
    public var roundTripNanoseconds: UInt64? { nil }
    public func probeRequest(now: MediaTime) -> ProbeCluster? { nil }
    public func requestProbe(bitrate: Int, probeFurther: Bool, now: MediaTime) {}
}
