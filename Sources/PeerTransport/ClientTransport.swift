import ChorusCore
import DTLS
import ICELite
import RTCP
import RTP
import SRTP
import STUN

/// How a client transport paces its own connectivity checks: until one is answered a new one
/// goes out every `retransmitNanoseconds` (as the load generator always did); once answered, a
/// consent check every `consentNanoseconds` (RFC 7675 §5.1: about 5 s), and consent is lost when
/// none was answered for `consentTimeoutNanoseconds` (30 s) — or, before the first answer, 30 s
/// after the transport (or its last ICE restart) began.
public struct ICECheckSchedule: Sendable, Equatable {
    public var retransmitNanoseconds: UInt64 = 100_000_000
    public var consentNanoseconds: UInt64 = 5_000_000_000
    public var consentTimeoutNanoseconds: UInt64 = ConsentFreshness.defaultTimeoutNanoseconds

    public init() {}
}

/// Everything a client transport needs from its offer and the server's answer.
public struct ClientTransportConfiguration: Sendable {
    public var localICE: ICECredentials
    public var remoteICE: ICECredentials
    /// The server's candidate (the answer's): everything goes there, and nothing from another
    /// address is accepted (a client with one host candidate has this one pair).
    public var remote: TransportAddress
    /// `.client` when the answer said `a=setup:passive` (or our answer said `active`).
    public var dtlsRole: DTLSRole
    public var remoteFingerprints: [DTLSFingerprint]
    /// False when the peer made the offer and its full agent controls (RFC 8445 §6.1.1).
    public var isControlling = true
    /// Our ICE-CONTROLLING/ICE-CONTROLLED tie-breaker (RFC 8445 §7.1.3).
    public var tieBreaker: UInt64
    /// Our SSRC in the RTCP we originate: receiver reports, feedback, NACK, PLI.
    public var rtcpSSRC: SSRC
    public var cname = "chorus-client"
    /// The transport's own checks and consent; nil: the owner sends checks itself
    /// (`connectivityCheck`) and consent is never judged here (a test drives every step).
    public var checks: ICECheckSchedule? = ICECheckSchedule()
    /// Receiver reports (RFC 3550 §6.4.2) about the streams received, about once a second.
    public var sendsReceiverReports = false
    /// RTP clock rate per payload type received, for the reports' jitter (default 90 kHz).
    public var clockRates: [UInt8: UInt64] = [:]
    /// The transport-wide sequence number's extension ID when the answer kept transport-cc:
    /// what we send is stamped, what we receive is reported back (`TransportFeedbackRecorder`).
    public var transportWideSequenceExtensionID: UInt8?

    public init(localICE: ICECredentials, remoteICE: ICECredentials, remote: TransportAddress, dtlsRole: DTLSRole,
                remoteFingerprints: [DTLSFingerprint], tieBreaker: UInt64, rtcpSSRC: SSRC) {
        self.localICE = localICE
        self.remoteICE = remoteICE
        self.remote = remote
        self.dtlsRole = dtlsRole
        self.remoteFingerprints = remoteFingerprints
        self.tieBreaker = tieBreaker
        self.rtcpSSRC = rtcpSSRC
    }
}

/// The client side of one bundled WebRTC connection (what a browser is towards Chorus), as a
/// sans-IO engine shaped like the server's `PeerTransport`: ICE as the controlling agent
/// (`ICEClientRole`: checks with USE-CANDIDATE until one is answered, then consent checks, and
/// answers to the peer's own checks), DTLS in either role, SRTP (`OpenSSLSRTPTransform`), and
/// RTCP feedback: receiver reports, transport-cc feedback and transport-wide sequence numbers
/// when negotiated, NACK and PLI to send; what arrives comes back as parsed values.
///
/// Driven by its owner (the test support's `ClientPeer`, the load generator's connection):
/// every datagram from the server goes to `receive`, `poll` runs when `nextDeadline` has come,
/// media goes out through `sendRTP`/`sendRTCP`. Each call appends what must be sent to the
/// caller's `transmits` and returns what happened (`TransportEvent`, or why a datagram was
/// dropped). No socket, no clock, no thread: time is a parameter. Nothing from the network
/// traps: it is dropped and counted.
///
/// A class: it owns OpenSSL DTLS and SRTP contexts, which cannot be copied. Not `Sendable`:
/// its owner confines it to one thread of control.
public final class ClientTransport {
    public let configuration: ClientTransportConfiguration
    public internal(set) var counters = TransportCounters()
    /// The checks and answers of the current ICE generation.
    public internal(set) var ice: ICEClientRole
    let dtls: DTLSEndpoint
    /// `dtls.nextDeadline`, copied after each call into the endpoint (the only times it changes).
    var dtlsDeadline: MediaTime?
    public internal(set) var srtp: OpenSSLSRTPTransform?
    /// How the server answered the last of our checks it answered.
    public internal(set) var lastCheckOutcome: ICECheckOutcome?
    /// A check of the current ICE generation was answered: the pair is valid (and, controlling,
    /// nominated).
    public internal(set) var hasValidPair = false
    /// We answered an authenticated check of the peer's: it has our credentials, so its DTLS
    /// may come before our own check is answered (a full-ICE server that is the DTLS client).
    var answeredPeerCheck = false
    /// Our checks awaiting an answer, oldest first (a few, so that a slow answer still counts).
    var pendingChecks: [TransactionID] = []
    var nextCheckAt: MediaTime?
    /// When a check was last answered (or the ICE generation began): consent runs from here.
    var consentGrantedAt: MediaTime
    public internal(set) var consentExpired = false
    var dtlsStarted = false
    /// We closed the association (`close`): nothing more is sent.
    public internal(set) var isClosed = false
    /// The peer's close_notify arrived.
    public internal(set) var closedByPeer = false
    var streams: [SSRC: ReceptionStatistics] = [:]
    var nextReportAt: MediaTime?
    var reportRandom: UInt64
    /// Arrivals of the server's transport-wide sequence numbers; nil unless negotiated.
    var transportFeedback: TransportFeedbackRecorder?
    /// The last media SSRC heard with a transport-wide number, named in the feedback.
    var lastMediaSSRC = SSRC(0)
    var nextTransportSequenceNumber: UInt16

    public init(configuration: ClientTransportConfiguration, dtlsContext: DTLSContext, now: MediaTime)
        throws(DTLSError)
    {
        self.configuration = configuration
        ice = ICEClientRole(local: configuration.localICE, remote: configuration.remoteICE,
                            tieBreaker: configuration.tieBreaker, isControlling: configuration.isControlling)
        dtls = try DTLSEndpoint(context: dtlsContext, role: configuration.dtlsRole,
                                remoteFingerprints: configuration.remoteFingerprints)
        dtlsDeadline = dtls.nextDeadline
        consentGrantedAt = now
        nextCheckAt = configuration.checks == nil ? nil : now
        reportRandom = UInt64(configuration.rtcpSSRC.rawValue) | 1
        nextTransportSequenceNumber = UInt16(truncatingIfNeeded: configuration.tieBreaker)
        if configuration.transportWideSequenceExtensionID != nil { transportFeedback = TransportFeedbackRecorder() }
    }

    /// DTLS is done and SRTP keyed (and we have not closed).
    public var isConnected: Bool { srtp != nil && !isClosed }

    /// Where everything goes: the server's candidate.
    public var remote: TransportAddress { configuration.remote }

    /// Handles one datagram from `source`; what it answers (a check's response, a DTLS flight)
    /// is appended to `transmits`. Consumes the datagram: SRTP is removed in place.
    public func receive(_ datagram: consuming [UInt8], from source: TransportAddress, now: MediaTime,
                        transmits: inout [Transmit]) -> Result<TransportEvent?, TransportDropReason>
    {
        guard source == configuration.remote else { return drop(.notValidated) }
        // A copy of the reference only (classifying reads the first byte): the buffer is the
        // caller's, unshared again once SRTP removes its tag in place.
        switch PacketClass(copy datagram) {
        case .stun: return receiveSTUN(datagram, now: now, transmits: &transmits)
        case .dtls: return receiveDTLS(datagram, now: now, transmits: &transmits)
        case .rtp: return receiveSRTP(datagram, rtcp: false, now: now)
        case .rtcp: return receiveSRTP(datagram, rtcp: true, now: now)
        case .unknown: return drop(.unknownClass)
        }
    }

    func drop(_ reason: TransportDropReason) -> Result<TransportEvent?, TransportDropReason> {
        counters.packetsDropped &+= 1
        return .failure(reason)
    }

    private func receiveDTLS(_ datagram: [UInt8], now: MediaTime, transmits: inout [Transmit])
        -> Result<TransportEvent?, TransportDropReason>
    {
        // Before any check succeeded either way, nobody proved to hold the credentials.
        guard hasValidPair || answeredPeerCheck || srtp != nil else { return drop(.dtlsBeforeICE) }
        let output = dtls.handle(datagram, now: now)
        dtlsDeadline = dtls.nextDeadline
        if output.malformed != nil { return drop(.malformed) }
        for record in output.datagrams { transmits.append((record, configuration.remote)) }
        return .success(handleDTLSEvent(output.event, now: now))
    }

    func handleDTLSEvent(_ event: DTLSEvent?, now: MediaTime) -> TransportEvent? {
        switch event {
        case .connected(let keys):
            do {
                srtp = try OpenSSLSRTPTransform(keys)
            } catch {
                return .failed("SRTP setup: \(error)")
            }
            // First report half an interval after keys exist (RFC 3550 §6.2: initial interval halved).
            if configuration.sendsReceiverReports {
                nextReportAt = now.adding(nanoseconds: RTCPReporting.intervalNanoseconds / 2)
            }
            return .connected(keys.profile)
        case .failed(let error): return .failed("\(error)")
        case .closed:
            closedByPeer = true
            return .closed
        case nil: return nil
        }
    }

    /// SRTP or SRTCP, removed in the datagram's own buffer.
    private func receiveSRTP(_ datagram: consuming [UInt8], rtcp: Bool, now: MediaTime)
        -> Result<TransportEvent?, TransportDropReason>
    {
        guard let srtp else { return drop(.srtpNotReady) }
        let size = datagram.count
        var packet = consume datagram
        do {
            if rtcp { try srtp.unprotectRTCP(&packet) } else { try srtp.unprotectRTP(&packet) }
        } catch {
            return drop(error == .replayed ? .srtpReplay : .srtpAuthentication)
        }
        return rtcp ? rtcpArrived(packet, now: now) : rtpArrived(packet, size: size, now: now)
    }

    private func rtpArrived(_ packet: [UInt8], size: Int, now: MediaTime) -> Result<TransportEvent?, TransportDropReason> {
        guard let rtp = try? RTPPacket(parsing: packet) else { return drop(.malformed) }
        recordArrival(rtp, size: size, now: now)
        return .success(.rtp(rtp))
    }

    /// A received RTP packet's bookkeeping: counters, the receiver reports' statistics, and its
    /// transport-wide sequence number for transport-cc feedback (all from the header).
    func recordArrival(_ rtp: RTPPacket, size: Int, now: MediaTime) {
        counters.packetsReceived &+= 1
        counters.bytesReceived &+= UInt64(size)
        let header = rtp.header
        if configuration.sendsReceiverReports {
            let rate = configuration.clockRates[header.payloadType.rawValue] ?? 90_000
            streams[header.ssrc, default: ReceptionStatistics(ssrc: header.ssrc, clockRate: rate)]
                .record(sequenceNumber: header.sequenceNumber, timestamp: header.timestamp, at: now)
        }
        if let id = configuration.transportWideSequenceExtensionID, header.hasExtension,
           let value = rtp.headerExtensions.first(id: id), value.count >= 2 {
            lastMediaSSRC = header.ssrc
            transportFeedback?.record(value.uint16(at: 0), at: now)
        }
    }

    private func rtcpArrived(_ packet: [UInt8], now: MediaTime) -> Result<TransportEvent?, TransportDropReason> {
        guard let compound = try? RTCPCompoundPacket(parsing: packet) else { return drop(.malformed) }
        counters.rtcpReceived &+= 1
        // A sender report gives our reports' LSR and DLSR (RFC 3550 §6.4.1), so that the
        // server learns the round trip; only decoded here when we report at all.
        if configuration.sendsReceiverReports {
            for case .senderReport(let report) in compound {
                streams[report.ssrc]?.recordSenderReport(report.ntpTimestamp, at: now)
            }
        }
        return .success(.rtcp(compound))
    }

    /// The timers' work, appended to `transmits`: checks and consent checks, DTLS
    /// retransmissions, receiver reports, transport-cc feedback; consent loss as an event.
    public func poll(now: MediaTime, transmits: inout [Transmit]) -> TransportEvent? {
        if let deadline = dtlsDeadline, now >= deadline {
            let output = dtls.handleTimeout(now: now)
            dtlsDeadline = dtls.nextDeadline
            for datagram in output.datagrams { transmits.append((datagram, configuration.remote)) }
            if let event = handleDTLSEvent(output.event, now: now) { return event }
        }
        if let event = checkConsent(now: now) { return event }
        sendCheckIfDue(now: now, transmits: &transmits)
        sendReportIfDue(now: now, transmits: &transmits)
        sendTransportFeedbackIfDue(now: now, transmits: &transmits)
        return nil
    }

    /// The earliest time `poll` has work to do (the far future when it has none).
    public var nextDeadline: MediaTime {
        var deadline = MediaTime(nanoseconds: .max)
        if let check = nextCheckAt, check < deadline { deadline = check }
        if let consent = consentDeadline, consent < deadline { deadline = consent }
        if let dtls = dtlsDeadline, dtls < deadline { deadline = dtls }
        if let report = nextReportAt, report < deadline { deadline = report }
        if let feedback = transportFeedback?.nextFeedbackAt, feedback < deadline { deadline = feedback }
        return deadline
    }
}
