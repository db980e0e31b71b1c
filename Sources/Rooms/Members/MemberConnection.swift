import ChorusCore
import CongestionControl
import PeerTransport
import RTCP
import RTP

/// What one datagram of a member carried, or what its connection noticed on a timer, as the
/// room needs it. Every kind of member says it in these words.
public enum MemberSignal {
    /// Media, decrypted and parsed once.
    case rtp(RTPPacket)
    /// Feedback, decrypted and validated; its packets are decoded once, by the room.
    case rtcp(RTCPCompoundPacket)
    /// Datagrams from this address are the member's (it passed a check, was nominated, or is
    /// being checked): the media port routes them here.
    case route(TransportAddress)
    /// The member moved to `to` without a new nomination (NAT rebinding); `from` is stale.
    case pathChanged(from: TransportAddress, to: TransportAddress)
    /// Media can flow both ways; `security` names its protection (an SRTP profile, or "none").
    case connected(security: String)
    /// The connection failed (e.g. a DTLS certificate not matching the offer).
    case failed(String)
    /// The member closed its end (DTLS close_notify).
    case closed
    /// Nothing proved the member is there for the consent timeout (RFC 7675).
    case consentExpired
}

/// A member's connection to the room: how its datagrams become media and feedback, and how the
/// room's media reaches it. The kinds: a WebRTC peer (`WebRTCConnection`, over `PeerTransport`:
/// ICE-lite, DTLS-SRTP), a plain-RTP endpoint (`PlainRTPConnection`: a phone's media, or a
/// test member), and later a link to the same room's part on another node.
///
/// The room's stages write their RTP and RTCP through it (`sendRTP`, `sendRTCP`: it protects,
/// stamps and addresses them) and read what it knows of the path toward the member (the
/// send-side estimate, the round-trip time, probes); they never ask which kind it is. Driven on
/// the room's queue by the room core: `receive` per datagram, `poll` when `nextDeadline` has
/// passed. Peer input never traps: a datagram it cannot use is a counted drop.
public protocol MemberConnection: AnyObject {
    /// The SSRC of what the room sends the member first (its mix stream): the sender SSRC of
    /// the room's RTCP toward it.
    var rtcpSSRC: SSRC { get }
    var counters: TransportCounters { get }
    /// When `poll` must run next (timers: retransmissions, consent, RTCP reports).
    var nextDeadline: MediaTime { get }

    /// The routing entries of this kind of member (`joining`: to add; else: to remove): a
    /// WebRTC peer's ICE ufrag and sender SSRCs, a phone's remote address. The room keeps the
    /// addresses bound at join with those its signals bound later, and unbinds them all at the
    /// member's leave.
    func routes(joining: Bool, callId: CallID) -> [RoutingChange]

    /// One datagram routed to the member; what it answers is appended to `transmits`.
    func receive(_ datagram: [UInt8], from source: TransportAddress, now: MediaTime, transmits: inout [Transmit])
        -> Result<MemberSignal?, TransportDropReason>
    /// Runs the timers that are due.
    func poll(now: MediaTime, transmits: inout [Transmit]) -> MemberSignal?

    /// Sends an RTP packet the room wrote (protected, stamped, addressed here); false when it
    /// cannot be sent yet. `reporting` describes a packet on `rtcpSSRC`'s stream (the mix) for
    /// the member's sender reports; `probeClusterID` marks a bandwidth probe's packet.
    @discardableResult
    func sendRTP(_ packet: [UInt8], reporting: ReportedPacket?, probeClusterID: Int?, now: MediaTime,
                 transmits: inout [Transmit]) -> Bool
    /// Sends an RTCP compound packet the room wrote; false when it cannot be sent yet.
    @discardableResult
    func sendRTCP(_ compound: [UInt8], transmits: inout [Transmit]) -> Bool
    /// Says goodbye (RTCP BYE for `sources`, and whatever else ends the connection).
    func close(sources: [SSRC], now: MediaTime, transmits: inout [Transmit])

    /// Feedback the room decoded that concerns the connection itself: a sender report (for the
    /// LSR/DLSR of its receiver reports), a report block about the mix stream (round-trip
    /// time), transport-cc feedback (the send-side estimate).
    func receivedSenderReport(_ report: SenderReport)
    func receivedReportBlock(_ block: ReportBlock, now: MediaTime)
    func receivedTransportFeedback(_ feedback: TransportFeedback, now: MediaTime)

    /// The connection's own estimate of the path toward the member (transport-cc), if any.
    var bandwidthEstimate: BandwidthEstimate? { get }
    /// The round-trip time from the member's receiver reports, ns.
    var roundTripNanoseconds: UInt64? { get }
    /// A probe cluster the estimator wants sent now, if any.
    func probeRequest(now: MediaTime) -> ProbeCluster?
    /// Asks the estimator for a probe at `bitrate` (a paused slot's need).
    func requestProbe(bitrate: Int, probeFurther: Bool, now: MediaTime)
}

extension MemberConnection {
    /// The target bitrate of the connection's own estimate, nil without one.
    public var estimatedBitrate: Int? { bandwidthEstimate?.targetBitrate }

    @discardableResult
    public func sendRTP(_ packet: [UInt8], now: MediaTime, transmits: inout [Transmit]) -> Bool {
        sendRTP(packet, reporting: nil, probeClusterID: nil, now: now, transmits: &transmits)
    }
}
