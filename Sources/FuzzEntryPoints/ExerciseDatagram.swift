import ChorusCore
import DTLS
import ICELite
import MediaSocket
@_spi(Harness) import PeerTransport
import RTCP
import RTP
import SRTP
import STUN

/// A receiver the router can name; the fuzz harness only compares identities. Immutable, so
/// `Sendable` (as `DatagramReceiver` requires) without `@unchecked`.
final class NamedReceiver: DatagramReceiver {
    let name: String
    init(_ name: String) { self.name = name }
    func receive(_ datagrams: ArraySlice<ReceivedDatagram>, readerIsLight: Bool) {}
}

/// The whole per-datagram server path for one participant: the RFC 7983 classifier
/// (`PacketClass`), the media port's `DatagramRouter.route`, and `PeerTransport.receive` with its
/// ICE-lite agent, DTLS endpoint, SRTP and RTCP handling, plus `poll` for timers and reports.
///
/// The input is a `FuzzInput`. Bits 0–1 of the mode byte pick how far the connection is before
/// the fuzz datagrams arrive:
/// - 0: nothing happened yet (no ICE check): everything must be dropped or refused;
/// - 1: the client passed an ICE check with USE-CANDIDATE; the server is the DTLS server, so
///   datagrams reach its handshake, and RTP/RTCP are refused before SRTP;
/// - 2: ICE completed with our own client peer and DTLS taken as done with keys from one real
///   handshake per process (`FuzzPeerSession.clientKeys`); datagrams that classify as RTP or RTCP
///   are SRTP-protected with the client's keys first (when the transform accepts them), so the
///   decrypted-packet path (RTP header, receive statistics, RTCP compound) sees the fuzz bytes,
///   as from a malicious participant;
/// - 3: as 1, but the server is the DTLS client (an offer with `a=setup:passive`).
/// Bit 2 sends every other datagram from a second, never validated address. Bit 3 fires the
/// transport's timers (`poll`) after every datagram. Bit 4 rebuilds each datagram that classifies
/// as STUN into a signed request (see `signedRequest(from:)`), so that checks authenticate and
/// reach the agent's answers, nominations and refusals. Each datagram advances the clock 20 ms;
/// at the end timers fire at +2 s and +31 s (reports, consent expiry).
///
/// Invariant checked: the server sends nothing but STUN to an address that never passed ICE
/// (no DTLS or SRTP towards a spoofed source).
public func exerciseDatagram(_ bytes: [UInt8]) {
    let input = FuzzInput(bytes)
    let router = DatagramRouter()
    let participant = NamedReceiver("participant")
    let other = NamedReceiver("other")
    router.register(ufrag: FuzzICE.server.ufrag, receiver: participant)
    router.register(ufrag: "othr", receiver: other)
    router.bind(FuzzICE.clientAddress, to: participant)
    router.bind(FuzzICE.stranger, to: other)

    var session = FuzzPeerSession(dtlsRole: input.mode & 3 == 3 ? .client : .server)
    switch input.mode & 3 {
    case 0: break
    case 1, 3: session.checkICE()
    default: session.connectWithKnownKeys()
    }
    let protectMedia = input.mode & 3 == 2
    for (index, datagram) in input.datagrams.enumerated() {
        let source = input.mode & 4 != 0 && index % 2 == 1 ? FuzzICE.stranger : FuzzICE.clientAddress
        exerciseClassifier(datagram, router: router, source: source, participant: participant)
        session.now = session.now.adding(milliseconds: 20)
        var wire = datagram
        if input.mode & 0x10 != 0, PacketClass(datagram) == .stun, let signed = signedRequest(from: datagram) {
            wire = signed
        }
        if protectMedia { session.protect(&wire) }
        exerciseClassifier(wire, router: router, source: source, participant: participant)
        session.deliver(wire, from: source)
        if input.mode & 8 != 0 { session.poll(at: max(session.now, session.transport.nextDeadline)) }
    }
    session.poll(at: session.now.adding(milliseconds: 2_000))
    session.poll(at: session.now.adding(milliseconds: 31_000))
    consume((session.transport.counters, session.transport.isConnected, session.transport.destination))
}

/// What the media socket does first with every datagram.
func exerciseClassifier(_ datagram: [UInt8], router: DatagramRouter, source: TransportAddress,
                        participant: NamedReceiver) {
    let packetClass = PacketClass(datagram)
    if let first = datagram.first {
        fuzzRequire((packetClass == .stun) == STUNMessage.looksLikeSTUN(firstByte: first),
                    "PacketClass and looksLikeSTUN disagree on first byte \(first)")
    } else {
        fuzzRequire(packetClass == .unknown, "an empty datagram classified as \(packetClass)")
    }
    let receiver = router.route(datagram, from: source)
    if packetClass != .stun {
        // Non-STUN is routed by source address only.
        fuzzRequire((receiver === participant) == (source == FuzzICE.clientAddress), "non-STUN routed by content")
    }
    consume(router.counts)
}

/// A server-side `PeerTransport` with fixed credentials and our own client-role ICE, DTLS and
/// SRTP peer, in process, on a simulated clock.
struct FuzzPeerSession {
    /// What the transport produced so far (taken by the client peer during `connect`).
    var sent: [Transmit] = []
    let transport: PeerTransport
    let clientICE = ICEClientRole(local: FuzzICE.client, remote: FuzzICE.server, tieBreaker: 42)
    let clientDTLS: DTLSEndpoint
    /// The client's SRTP: the OpenSSL transform. libsrtp2 (Debian's, on NSS) loaded NSS modules through
    /// the dynamic linker for every session, which was most of this harness's time per input.
    var clientSRTP: OpenSSLSRTPTransform?
    var clientKeys: SRTPKeyingMaterial?
    var now = FuzzICE.start
    /// Addresses the transport reported as validated by ICE.
    var validated: Set<TransportAddress> = []
    /// How many of `sent` `checkSent` has seen.
    var checked = 0

    init(dtlsRole: DTLSRole) {
        var configuration = PeerTransportConfiguration(
            localICE: FuzzICE.server, remoteICE: FuzzICE.client, dtlsRole: dtlsRole,
            remoteFingerprints: [FuzzDTLS.clientFingerprint], rtcpSSRC: SSRC(1111), cname: "chorus-fuzz",
            clockRates: [111: 48_000, 96: 90_000],
            ntpReference: NTPClockReference(mediaTime: FuzzICE.start,
                                            ntp: NTPTimestamp(seconds: 3_900_000_000, fraction: 0)))
        // Chrome's ID: SRTP inputs that carry the extension reach the transport-cc recorder.
        configuration.transportWideSequenceExtensionID = 3
        do {
            transport = try PeerTransport(configuration: configuration, dtlsContext: FuzzDTLS.serverContext,
                                          now: FuzzICE.start)
            clientDTLS = try DTLSEndpoint(context: FuzzDTLS.clientContext, role: .client,
                                          remoteFingerprints: [FuzzDTLS.serverFingerprint])
        } catch {
            fatalError("fuzz setup: \(error)")
        }
    }

    /// A valid connectivity check with USE-CANDIDATE from the client address.
    mutating func checkICE() {
        let check = clientICE.bindingRequest(transactionID: TransactionID(high: 1, low: 2), useCandidate: true)
        deliver(check, from: FuzzICE.clientAddress)
        fuzzRequire(validated.contains(FuzzICE.clientAddress), "a valid ICE check did not validate the address")
    }

    /// ICE, then the DTLS handshake against our client; traps if it does not connect.
    mutating func connect() {
        checkICE()
        _ = takeSent()
        var toServer = clientDTLS.start(now: now).datagrams
        for _ in 0..<10 where !toServer.isEmpty {
            for datagram in toServer { deliver(datagram, from: FuzzICE.clientAddress) }
            toServer = []
            for (datagram, _) in takeSent() {
                let output = clientDTLS.handle(datagram, now: now)
                toServer += output.datagrams
                if case .connected(let keys) = output.event {
                    clientKeys = keys
                    clientSRTP = try? OpenSSLSRTPTransform(keys)
                }
            }
        }
        fuzzRequire(transport.isConnected && clientSRTP != nil, "the in-process DTLS handshake did not complete")
    }

    /// The client's SRTP keys from one real handshake per process: mode 2 then costs an ICE
    /// check and two SRTP key setups per input instead of a DTLS handshake (about 100 times
    /// more inputs per second). The handshake itself is what mode 1 and 3 and `FuzzDTLS` fuzz.
    static let clientKeys: SRTPKeyingMaterial = {
        var session = FuzzPeerSession(dtlsRole: .server)
        session.connect()
        guard let keys = session.clientKeys else { fatalError("fuzz setup: no SRTP keys from the handshake") }
        return keys
    }()

    /// ICE through the transport, then the handshake taken as done with `clientKeys` mirrored.
    mutating func connectWithKnownKeys() {
        checkICE()
        let client = Self.clientKeys
        let server = SRTPKeyingMaterial(profile: client.profile, local: client.remote, remote: client.local)
        do {
            try transport.assumeHandshakeDone(keys: server, now: now)
            clientSRTP = try OpenSSLSRTPTransform(client)
        } catch {
            fatalError("fuzz setup: SRTP keys refused: \(error)")
        }
        _ = takeSent()
    }

    /// SRTP- or SRTCP-protects `datagram` in place with the client's keys when it classifies as
    /// RTP or RTCP and the transform accepts it; leaves it alone otherwise.
    func protect(_ datagram: inout [UInt8]) {
        guard let clientSRTP else { return }
        var protected = datagram
        switch PacketClass(datagram) {
        case .rtp: guard (try? clientSRTP.protectRTP(&protected)) != nil else { return }
        case .rtcp: guard (try? clientSRTP.protectRTCP(&protected)) != nil else { return }
        default: return
        }
        datagram = protected
    }

    mutating func deliver(_ datagram: [UInt8], from source: TransportAddress) {
        switch transport.receive(datagram, from: source, now: now, transmits: &sent) {
        case .success(let event?):
            switch event {
            case .addressValidated(let address), .nominated(let address): validated.insert(address)
            case .rtp(let packet):
                fuzzRequire((try? RTPHeader(parsing: packet.bytes)) == packet.header, "accepted RTP does not parse alike")
            case .rtcp(let compound):
                for packet in compound { consume(packet) }
            default: break
            }
        case .success(nil): break
        case .failure(let reason): consume(reason.rawValue)
        }
        checkSent()
    }

    /// The datagrams sent so far (all checked already), for the client peer to read.
    mutating func takeSent() -> [Transmit] {
        checkSent()
        checked = 0
        defer { sent.removeAll() }
        return sent
    }

    mutating func poll(at time: MediaTime) {
        now = max(now, time)
        consume(transport.poll(now: now, transmits: &sent))
        checkSent()
    }

    /// Only STUN (answers to checks) may go to an address that never passed ICE. Checks what was
    /// sent since the last check; `connect` takes the datagrams afterwards.
    mutating func checkSent() {
        for (datagram, destination) in sent[checked...] where PacketClass(datagram) != .stun {
            fuzzRequire(validated.contains(destination),
                        "sent \(PacketClass(datagram)) to \(destination), which never passed ICE")
        }
        checked = sent.count
    }
}

