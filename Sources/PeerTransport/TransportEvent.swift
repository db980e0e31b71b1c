import ChorusCore
import RTCP
import RTP
import SRTP

/// What one step of a `PeerTransport` means for its owner (the room). At most one per datagram,
/// so the per-packet path allocates no event list.
public enum TransportEvent: Sendable, Equatable {
    /// A valid ICE check came from this address: route its non-STUN datagrams here too.
    case addressValidated(TransportAddress)
    /// The peer nominated this address (USE-CANDIDATE): media goes there from now on.
    case nominated(TransportAddress)
    /// Authentic SRTP came from this unvalidated address and the transport is checking it:
    /// route its datagrams (the check's answer) here; nothing is adopted until it validates.
    case probing(TransportAddress)
    /// The selected address went silent while another validated one is heard (NAT rebinding):
    /// media goes to `to` now, and `from` is no longer valid.
    case pathChanged(from: TransportAddress, to: TransportAddress)
    /// DTLS finished and SRTP is keyed: the call is established.
    case connected(SRTPProtectionProfile)
    /// DTLS failed (e.g. the certificate does not match the offer's fingerprint).
    case failed(String)
    /// The peer closed DTLS (close_notify).
    case closed
    /// No valid ICE check for the consent timeout (RFC 7675), or none ever since the join.
    case consentExpired
    /// A decrypted RTP packet, its header parsed.
    case rtp(RTPPacket)
    /// A decrypted RTCP compound packet, validated (RFC 3550 §A.2); its packets are decoded
    /// once, by whoever iterates it.
    case rtcp(RTCPCompoundPacket)
}

/// Counters of one connection, reported by the API and stored at call end.
public struct TransportCounters: Sendable, Equatable, Codable {
    public var packetsReceived: UInt64 = 0
    public var bytesReceived: UInt64 = 0
    public var packetsSent: UInt64 = 0
    public var bytesSent: UInt64 = 0
    public var rtcpReceived: UInt64 = 0
    public var rtcpSent: UInt64 = 0
    /// Datagrams dropped: SRTP authentication or replay failures, malformed packets.
    public var packetsDropped: UInt64 = 0
    public var stunReceived: UInt64 = 0
    /// Packets that could not be sent once connected (SRTP refused to protect them, or they
    /// were not RTP): never expected, counted so that a stalled stream shows why.
    public var sendFailures: UInt64 = 0
    /// Times media moved to a new address of the peer without a nomination (NAT rebinding).
    public var pathChanges: UInt64 = 0
    /// Transport-cc feedback messages sent (about 10 a second while the peer sends media with
    /// transport-wide sequence numbers, when negotiated).
    public var transportFeedbackSent: UInt64 = 0
    /// Transport-cc feedback messages received from the peer about what the server sent it.
    public var transportFeedbackReceived: UInt64 = 0

    public init() {}
}

/// Why a datagram was dropped, for `/metrics` (a small fixed set of labels).
public enum TransportDropReason: String, Error, Sendable, CaseIterable {
    case iceRefused = "ice"
    case notValidated = "unvalidated_source"
    case dtlsBeforeICE = "dtls_before_ice"
    case srtpNotReady = "srtp_not_ready"
    case srtpAuthentication = "srtp_auth"
    case srtpReplay = "srtp_replay"
    case malformed = "malformed"
    case unknownClass = "unknown_class"
}
