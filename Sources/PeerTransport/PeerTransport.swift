import ChorusCore
import CongestionControl
import DTLS
import ICELite
import RTCP
import RTP
import SRTP
import STUN

/// Everything one peer transport needs from the offer/answer.
public struct PeerTransportConfiguration: Sendable {
    public var localICE: ICECredentials
    public var remoteICE: ICECredentials
    public var dtlsRole: DTLSRole
    public var remoteFingerprints: [DTLSFingerprint]
    /// Our SSRC in RTCP (the SSRC of the stream we always send: the audio mix).
    public var rtcpSSRC: SSRC
    public var cname: String
    /// RTP clock rate per payload type the peer sends (48 kHz Opus, 90 kHz video).
    public var clockRates: [UInt8: UInt64]
    /// How long a join may take to see its first valid ICE check, and consent's lifetime.
    public var consentTimeoutNanoseconds: UInt64 = 30_000_000_000
    /// Wall clock (NTP) at a known monotonic instant, for sender reports.
    public var ntpReference: NTPClockReference
    /// The ID of the transport-wide sequence number extension when transport-cc is negotiated:
    /// arrivals of packets carrying it are reported back (`TransportFeedbackRecorder`).
    public var transportWideSequenceExtensionID: UInt8?
    /// abs-send-time for a client without transport-cc: its ID, and the payload types (the
    /// video slots') whose packets get it, stamped as they leave.
    public var absoluteSendTime: (id: UInt8, payloadTypes: Set<UInt8>)?
    /// The most the send-side estimator may estimate (and probe for), bit/s: what the peer
    /// could use (the mix and its video slots), so that probes never look for more.
    public var maximumSendBitrate = 2_700_000

    public init(localICE: ICECredentials, remoteICE: ICECredentials, dtlsRole: DTLSRole,
                remoteFingerprints: [DTLSFingerprint], rtcpSSRC: SSRC, cname: String, clockRates: [UInt8: UInt64],
                ntpReference: NTPClockReference) {
        self.ntpReference = ntpReference
        self.localICE = localICE
        self.remoteICE = remoteICE
        self.dtlsRole = dtlsRole
        self.remoteFingerprints = remoteFingerprints
        self.rtcpSSRC = rtcpSSRC
        self.cname = cname
        self.clockRates = clockRates
    }
}

/// One participant's bundled WebRTC connection (ICE-lite, DTLS-SRTP, rtcp-mux) on the shared
/// media port, as a sans-IO engine (str0m's shape): datagrams routed to the participant come in
/// through `receive`, timers through `poll`, and media goes out through `sendRTP`/`sendRTCP`.
/// Every call appends what must be sent to the caller's `transmits` (STUN answers, DTLS
/// flights, protected SRTP/SRTCP) and returns what it means as parsed values (`TransportEvent`:
/// `.rtp(RTPPacket)`, `.rtcp(RTCPCompoundPacket)`), so nothing downstream parses again.
/// Classification follows RFC 7983.
///
/// A class, not a value: it owns OpenSSL DTLS and SRTP contexts, which cannot be copied. Not
/// `Sendable`: its owner (a room's core) confines it to one thread of control.
public final class PeerTransport {
    public let configuration: PeerTransportConfiguration
    public internal(set) var counters = TransportCounters()
    public internal(set) var isConnected = false
    var ice: ICELiteAgent
    let dtls: DTLSEndpoint
    /// `dtls.nextDeadline`, copied after every call into the endpoint (the only times it
    /// changes): `nextDeadline` is read for every member on every tick, and reaching into the
    /// endpoint's own object for it was a cache miss each time in a big room.
    var dtlsDeadline: MediaTime?
    var srtp: (any SRTPTransform)?
    /// Addresses that passed an ICE check: only these may carry DTLS and SRTP.
    var validated: Set<TransportAddress> = []
    /// Where our media goes: the nominated address (or, before nomination, the last validated).
    public internal(set) var destination: TransportAddress?
    let createdAt: MediaTime
    /// When the current ICE generation began: the join, or the last restart.
    var iceStartedAt: MediaTime
    var streams: [SSRC: ReceptionStatistics] = [:]
    var sending = SendingState()
    var nextReportAt: MediaTime?
    var rtcpRandom: UInt64
    /// Arrivals to report with transport-cc; nil unless negotiated.
    var transportFeedback: TransportFeedbackRecorder?
    /// The last media SSRC heard, named as the media source of transport-cc feedback.
    var lastMediaSSRC = SSRC(0)
    /// The send side of transport-cc: the estimate of the path toward the peer; nil unless
    /// negotiated.
    var bandwidth: SendSideBandwidthEstimator?
    var nextTransportSequenceNumber: UInt16 = 1
    /// The last round-trip time measured from the peer's receiver reports, ns.
    public internal(set) var roundTripNanoseconds: UInt64?

    public init(configuration: PeerTransportConfiguration, dtlsContext: DTLSContext, now: MediaTime)
        throws(DTLSError)
    {
        self.configuration = configuration
        self.ice = ICELiteAgent(local: configuration.localICE, remote: configuration.remoteICE,
                                consentTimeoutNanoseconds: configuration.consentTimeoutNanoseconds)
        self.dtls = try DTLSEndpoint(context: dtlsContext, role: configuration.dtlsRole,
                                     remoteFingerprints: configuration.remoteFingerprints)
        self.createdAt = now
        self.iceStartedAt = now
        self.rtcpRandom = UInt64(configuration.rtcpSSRC.rawValue) | 1
        if configuration.transportWideSequenceExtensionID != nil {
            transportFeedback = TransportFeedbackRecorder()
            bandwidth = SendSideBandwidthEstimator(configuration: BandwidthEstimatorConfiguration(
                maximumBitrate: configuration.maximumSendBitrate,
                startBitrate: min(300_000, configuration.maximumSendBitrate)))
        }
        dtlsDeadline = dtls.nextDeadline
    }

    /// Handles one datagram routed to this participant; what it answers (a STUN response, a
    /// DTLS flight) is appended to `transmits`.
    public func receive(_ datagram: [UInt8], from source: TransportAddress, now: MediaTime,
                        transmits: inout [Transmit]) -> Result<TransportEvent?, TransportDropReason>
    {
        lastReceiveTime = now
        switch PacketClass(datagram) {
        case .stun: return receiveSTUN(datagram, from: source, now: now, transmits: &transmits)
        case .dtls: return receiveDTLS(datagram, from: source, now: now, transmits: &transmits)
        case .rtp:
            guard validated.contains(source) else {
                return probeIfAuthentic(datagram, rtcp: false, from: source, now: now, transmits: &transmits)
            }
            return receiveRTP(datagram, from: source, now: now)
        case .rtcp:
            guard validated.contains(source) else {
                return probeIfAuthentic(datagram, rtcp: true, from: source, now: now, transmits: &transmits)
            }
            return receiveRTCP(datagram, from: source, now: now)
        case .unknown: return drop(.unknownClass)
        }
    }

    func drop(_ reason: TransportDropReason) -> Result<TransportEvent?, TransportDropReason> {
        counters.packetsDropped &+= 1
        return .failure(reason)
    }

    private func receiveSTUN(_ datagram: [UInt8], from source: TransportAddress, now: MediaTime,
                             transmits: inout [Transmit]) -> Result<TransportEvent?, TransportDropReason>
    {
        counters.stunReceived &+= 1
        // A response (class bit C1 in the first byte) can only answer one of our probes.
        if datagram.first == 0x01 { return receiveProbeResponse(datagram, from: source) }
        switch ice.handle(datagram, from: source, now: now) {
        case .respond(let bytes, let to):
            transmits.append((bytes, to))
            let isNew = validated.insert(source).inserted
            if destination == nil { destination = source }
            heard(from: source, now: now, media: false)
            return .success(isNew ? .addressValidated(source) : nil)
        case .respondAndNominate(let bytes, let to):
            transmits.append((bytes, to))
            validated.insert(source)
            let changed = destination != source || !nominatedOnce
            destination = source
            nominatedOnce = true
            heard(from: source, now: now, media: false)
            startDTLSIfClient(now: now, transmits: &transmits)
            return .success(changed ? .nominated(source) : nil)
        case .error(let bytes, let to, _):
            transmits.append((bytes, to))
            return drop(.iceRefused)
        case .keepalive:
            return .success(nil)
        case .drop:
            return drop(.iceRefused)
        }
    }

    var nominatedOnce = false
    /// When the selected address was last heard (a valid check, SRTP or SRTCP).
    var destinationHeardAt = MediaTime(nanoseconds: 0)
    /// A validated address other than the selected one that is being heard (NAT rebinding).
    var pendingPath: (address: TransportAddress, heardAt: MediaTime)?
    /// Our own checks toward unvalidated addresses that sent authentic media, by address.
    var probes: [TransportAddress: (id: TransactionID, sentAt: MediaTime)] = [:]
    /// The server said goodbye (`close`): nothing more is sent.
    var isClosed = false
    var lastReceiveTime = MediaTime(nanoseconds: 0)
    var dtlsStarted = false

    /// A DTLS client (offer said `a=setup:passive`) speaks first, once ICE has a path.
    private func startDTLSIfClient(now: MediaTime, transmits: inout [Transmit]) {
        guard configuration.dtlsRole == .client, !dtlsStarted, let destination else { return }
        dtlsStarted = true
        for datagram in dtls.start(now: now).datagrams { transmits.append((datagram, destination)) }
        dtlsDeadline = dtls.nextDeadline
    }

    private func receiveDTLS(_ datagram: [UInt8], from source: TransportAddress, now: MediaTime,
                             transmits: inout [Transmit]) -> Result<TransportEvent?, TransportDropReason>
    {
        guard validated.contains(source) else { return drop(.dtlsBeforeICE) }
        let output = dtls.handle(datagram, now: now)
        dtlsDeadline = dtls.nextDeadline
        if output.malformed != nil { return drop(.malformed) }
        for record in output.datagrams { transmits.append((record, source)) }
        let event = handleDTLSEvent(output.event)
        if case .connected = event {
            // First report half an interval after keys exist (RFC 3550 §6.2: initial interval halved).
            nextReportAt = now.adding(nanoseconds: Self.reportIntervalNanoseconds / 2)
        }
        return .success(event)
    }

    func handleDTLSEvent(_ event: DTLSEvent?) -> TransportEvent? {
        switch event {
        case .connected(let keys):
            do {
                // OpenSSL EVP, not libsrtp2: Debian's libsrtp2 runs on NSS, which costs
                // 15–30 µs a packet at 1,000 sessions against ~0.5 µs (docs/PERFORMANCE.md).
                srtp = try OpenSSLSRTPTransform(keys)
            } catch {
                return .failed("SRTP setup: \(error)")
            }
            isConnected = true
            return .connected(keys.profile)
        case .failed(let error): return .failed("\(error)")
        case .closed: return .closed
        case nil: return nil
        }
    }

    /// SRTP from a validated address (`receive` sends the others to `probeIfAuthentic`).
    private func receiveRTP(_ datagram: [UInt8], from source: TransportAddress, now: MediaTime)
        -> Result<TransportEvent?, TransportDropReason>
    {
        guard let srtp else { return drop(.srtpNotReady) }
        var packet = datagram
        do {
            try srtp.unprotectRTP(&packet)
        } catch {
            return drop(error == .replayed ? .srtpReplay : .srtpAuthentication)
        }
        guard let rtp = try? RTPPacket(parsing: packet) else { return drop(.malformed) }
        mediaArrived(from: source, now: now)
        let header = rtp.header
        counters.packetsReceived &+= 1
        counters.bytesReceived &+= UInt64(datagram.count)
        let rate = configuration.clockRates[header.payloadType.rawValue] ?? 90_000
        streams[header.ssrc, default: ReceptionStatistics(ssrc: header.ssrc, clockRate: rate)]
            .record(sequenceNumber: header.sequenceNumber, timestamp: header.timestamp, at: now)
        recordTransportWideSequence(rtp, now: now)
        return .success(.rtp(rtp))
    }

    /// Our own timers' work, appended to `transmits`: DTLS retransmissions, RTCP reports; and
    /// consent expiry as an event.
    public func poll(now: MediaTime, transmits: inout [Transmit]) -> TransportEvent? {
        let retransmits = dtls.handleTimeout(now: now)
        dtlsDeadline = dtls.nextDeadline
        if let destination { for datagram in retransmits.datagrams { transmits.append((datagram, destination)) } }
        if let event = handleDTLSEvent(retransmits.event) { return event }
        if consentLost(now: now) { return .consentExpired }
        if let event = switchPathIfDue(now: now) { return event }
        sendReportIfDue(now: now, transmits: &transmits)
        sendTransportFeedbackIfDue(now: now, transmits: &transmits)
        return nil
    }

    /// No valid check within the timeout: since the last one, or since the join (or the last
    /// ICE restart) if none came.
    func consentLost(now: MediaTime) -> Bool {
        if nominatedOnce { return ice.consentExpired(now: now) }
        return now.nanoseconds(since: iceStartedAt) >= configuration.consentTimeoutNanoseconds
    }

    /// The earliest time `poll` has work to do.
    public var nextDeadline: MediaTime {
        // Read for every participant on every room tick: compared one by one, not gathered in
        // an array (two allocations a call, 100,000 a second in a room of 1,000).
        var deadline = ice.nextDeadline ?? iceStartedAt.adding(nanoseconds: configuration.consentTimeoutNanoseconds)
        if let dtls = dtlsDeadline, dtls < deadline { deadline = dtls }
        if let report = nextReportAt, report < deadline { deadline = report }
        if let pathSwitch = pathSwitchDeadline, pathSwitch < deadline { deadline = pathSwitch }
        if let feedback = transportFeedback?.nextFeedbackAt, feedback < deadline { deadline = feedback }
        return deadline
    }
}

extension PeerTransport {
    /// Takes the DTLS handshake as done and keys SRTP with `keys`, as `.connected` would. For
    /// harnesses that need the connected state thousands of times a second (the datagram
    /// fuzzer: a real handshake costs milliseconds, and OpenSSL's handshake is fuzzed on its
    /// own); the ICE check still goes through `receive`. Never used by the server.
    @_spi(Harness)
    public func assumeHandshakeDone(keys: SRTPKeyingMaterial, now: MediaTime) throws(SRTPError) {
        srtp = try OpenSSLSRTPTransform(keys)
        isConnected = true
        nextReportAt = now.adding(nanoseconds: Self.reportIntervalNanoseconds / 2)
    }
}
