import ChorusCore
import CongestionControl
import PeerTransport
import RTCP
import RTP
import Rooms

/// A member's connection for stage tests, at the member seam: it keeps what a stage sends the
/// member (RTP parsed, RTCP decoded, both in order, with the probe cluster each RTP packet was
/// marked with) and tells the stage the path estimate, round-trip time and probe the test sets.
/// No sockets, no crypto: what is checked is what the stage decided to send.
final class RecordingConnection: MemberConnection {
    let rtcpSSRC: SSRC
    var counters = TransportCounters()
    var nextDeadline = MediaTime(nanoseconds: .max)
    /// What the stage sent, in order.
    private(set) var sentRTP: [(packet: RTPPacket, probeCluster: Int?)] = []
    private(set) var sentRTCP: [RTCPPacket] = []
    /// What the connection says of its path.
    var bandwidthEstimate: BandwidthEstimate?
    var roundTripNanoseconds: UInt64?
    /// The probe it asks for at the next `probeRequest`, and the probes the stage asked of it.
    var pendingProbe: ProbeCluster?
    private(set) var probesRequested: [Int] = []

    init(rtcpSSRC: SSRC) {
        self.rtcpSSRC = rtcpSSRC
    }

    func routes(joining: Bool, callId: CallID) -> [RoutingChange] { [] }

    func receive(_ datagram: [UInt8], from source: TransportAddress, now: MediaTime, transmits: inout [Transmit])
        -> Result<MemberSignal?, TransportDropReason> { .success(nil) }

    func poll(now: MediaTime, transmits: inout [Transmit]) -> MemberSignal? { nil }

    func sendRTP(_ packet: [UInt8], reporting: ReportedPacket?, probeClusterID: Int?, now: MediaTime,
                 transmits: inout [Transmit]) -> Bool {
        guard let parsed = try? RTPPacket(parsing: packet) else { return false }
        sentRTP.append((parsed, probeClusterID))
        return true
    }

    func sendRTCP(_ compound: [UInt8], transmits: inout [Transmit]) -> Bool {
        guard let parsed = try? RTCPCompoundPacket(parsing: compound) else { return false }
        sentRTCP += Array(parsed)
        return true
    }

    func close(sources: [SSRC], now: MediaTime, transmits: inout [Transmit]) {}
    func receivedSenderReport(_ report: SenderReport) {}
    func receivedReportBlock(_ block: ReportBlock, now: MediaTime) {}
    func receivedTransportFeedback(_ feedback: TransportFeedback, now: MediaTime) {}

    func probeRequest(now: MediaTime) -> ProbeCluster? {
        defer { pendingProbe = nil }
        return pendingProbe
    }

    func requestProbe(bitrate: Int, probeFurther: Bool, now: MediaTime) { probesRequested.append(bitrate) }

    /// The RTP sent on `ssrc`, in order.
    func sent(on ssrc: SSRC) -> [RTPPacket] { sentRTP.map(\.packet).filter { $0.header.ssrc == ssrc } }

    func forget() {
        sentRTP.removeAll()
        sentRTCP.removeAll()
    }
}
