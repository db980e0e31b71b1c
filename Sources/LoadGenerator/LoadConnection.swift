import ChorusCore
import DTLS
import ICELite
import PeerTransport
import RTP

/// One simulated participant's connection to the server: the client side of ICE, DTLS, SRTP
/// and RTCP feedback (PeerTransport's `ClientTransport`, the one the tests' `ClientPeer` uses
/// too), the phase the run reports, and the way out: what the transport emits leaves through
/// `send` (the participant's socket, a shared socket's queue, or an ICE-TCP framing) when the
/// step that made it ends (`flush`).
///
/// A value owned by its `LoadParticipant`, driven on the participant's event loop: `start` with
/// the server's answer, `poll` from the participant's tick, `receive` for each datagram,
/// `sendRTP` for each packet its sources make.
struct LoadConnection {
    enum Phase: Equatable { case joining, checking, handshaking, established, failed(String) }

    let localICE = ICECredentials.random()
    let dtlsContext: DTLSContext
    private(set) var transport: ClientTransport?
    private(set) var phase = Phase.joining
    /// Where a datagram for the server goes: set by the runner when it hands the participant
    /// over to its loop.
    var send: ([UInt8]) -> Void = { _ in }
    var joinStartedAt = MediaTime.now()
    private(set) var establishedAt: MediaTime?
    /// Set when the run hangs up: a close from the server is then expected, not an error.
    var leaving = false
    private(set) var errors: [String] = []
    /// What the transport emitted in the current step, sent by `flush` (kept, not reallocated).
    private var transmits: [Transmit] = []
    /// For a listener that needs only headers (not a probe): one RTP packet in this many goes
    /// through SRTP (authenticated and decrypted); the others are taken on their clear header
    /// (`ClientTransport.receiveClearHeader`). 1: every packet through SRTP.
    var authenticateOneIn = 1
    private var sinceAuthenticated = 0

    init(dtlsContext: DTLSContext) {
        self.dtlsContext = dtlsContext
    }

    /// The answer (or the server's offer) arrived: the transport is made and its first check
    /// goes out. We control ICE when we made the offer; the answer's `a=setup:passive` makes us
    /// the DTLS client. `transportCC` when our offer asked for it and the answer kept it.
    mutating func start(_ answer: LoadSDP.Answer, rtcpSSRC: UInt32, controlling: Bool, transportCC: Bool,
                        now: MediaTime) {
        guard let remote = TransportAddress(ipv4: answer.host, port: UInt16(clamping: answer.port)) else {
            fail("the answer's candidate \(answer.host) is not an IPv4 address")
            return
        }
        var configuration = ClientTransportConfiguration(
            localICE: localICE, remoteICE: answer.ice, remote: remote, dtlsRole: answer.serverIsPassive ? .client : .server,
            remoteFingerprints: [answer.fingerprint], tieBreaker: UInt64.random(in: 0...UInt64.max), rtcpSSRC: SSRC(rtcpSSRC))
        configuration.isControlling = controlling
        configuration.cname = "load"
        if transportCC { configuration.transportWideSequenceExtensionID = LoadSDP.transportWideCCExtensionID }
        do {
            transport = try ClientTransport(configuration: configuration, dtlsContext: dtlsContext, now: now)
        } catch {
            fail("DTLS setup: \(error)")
            return
        }
        phase = .checking
        poll(now: now)
    }

    /// The transport's timers: checks until one is answered, then consent checks every 5 s,
    /// DTLS retransmissions, transport-cc feedback every 100 ms while the server's packets come.
    mutating func poll(now: MediaTime) {
        guard let transport else { return }
        if let event = transport.poll(now: now, transmits: &transmits) { handle(event, now: now) }
        flush()
    }

    /// One datagram from the server: the connection's own events change the phase; a packet
    /// (`.rtp`, `.rtcp`) is returned for the participant's statistics and sources. What is
    /// malformed or does not authenticate is dropped and counted by the transport.
    mutating func receive(_ datagram: consuming [UInt8], now: MediaTime) -> TransportEvent? {
        guard let transport else { return nil }
        let result = transport.receive(datagram, from: transport.remote, now: now, transmits: &transmits)
        if !transmits.isEmpty { flush() }
        guard case .success(let event?) = result else { return nil }
        switch event {
        case .rtp, .rtcp: return event
        default:
            handle(event, now: now)
            return nil
        }
    }

    /// The header of an RTP packet taken without SRTP, or nil when this one must go through
    /// `receive`: every packet before the call is established, and one in
    /// `authenticateOneIn` after, so that a forged or corrupted stream still shows (as dropped
    /// packets, `packetsDropped`) and the SRTP context keeps up with the sequence numbers.
    mutating func receiveHeader(_ datagram: [UInt8], now: MediaTime) -> RTPHeader? {
        guard authenticateOneIn > 1, phase == .established, let transport else { return nil }
        sinceAuthenticated += 1
        guard sinceAuthenticated < authenticateOneIn else {
            sinceAuthenticated = 0
            return nil
        }
        return transport.receiveClearHeader(datagram, from: transport.remote, now: now)
    }

    private mutating func handle(_ event: TransportEvent, now: MediaTime) {
        switch event {
        case .nominated, .addressValidated:
            if phase == .checking { phase = .handshaking }
        case .connected:
            phase = .established
            establishedAt = now
        case .failed(let reason):
            fail("DTLS: \(reason)")
        case .closed:
            if !leaving { fail("DTLS closed by the server") }
        case .consentExpired:
            if !leaving { fail("ICE consent expired: no check answered for 30 s") }
        case .probing, .pathChanged, .rtp, .rtcp:
            break
        }
    }

    /// One packet of a source, protected (and stamped with the transport-wide sequence number)
    /// for the server; it leaves with the step's `flush`.
    mutating func sendRTP(_ packet: consuming [UInt8]) {
        guard let transport else { return }
        if !transport.sendRTP(packet, transmits: &transmits), phase == .established, errors.isEmpty {
            errors.append("SRTP protect failed (\(transport.counters.sendFailures) so far)")
        }
    }

    /// Sends what the step produced, in order.
    mutating func flush() {
        for transmit in transmits { send(transmit.datagram) }
        transmits.removeAll(keepingCapacity: true)
    }

    mutating func fail(_ reason: String) {
        phase = .failed(reason)
        errors.append(reason)
    }

    /// When `poll` next has work (the far future before `start`).
    var nextDeadline: MediaTime { transport?.nextDeadline ?? MediaTime(nanoseconds: .max) }

    /// Transport-cc feedback messages sent so far.
    var transportFeedbackSent: Int { Int(transport?.counters.transportFeedbackSent ?? 0) }
}
