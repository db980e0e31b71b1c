import ChorusCore
import DTLS
import ICELite
import PeerTransport
import RTCP
import RTP
import SRTP
import STUN

/// A WebRTC client over the project's own client side of a connection, `ClientTransport`
/// (ICE as the controlling agent, a DTLS client, OpenSSL SRTP: the load generator's too), with
/// no socket and no clock: room-level tests exchange its datagrams with a room core in process,
/// on a simulated clock (str0m's two-peer `progress` loop). Its offer is a real client's (an
/// aiortc or browser fixture) with this peer's ICE credentials, fingerprint and SSRCs put in.
///
/// Driven by the test: `offer()`, then `accept(answer:)`, then `connectivityCheck()`; every
/// datagram from the server goes to `receive(_:now:)`, which answers (DTLS flights) and keeps
/// the decrypted media it carried. The test paces everything: the transport sends no checks,
/// reports or feedback of its own, and `poll` only retransmits DTLS.
public final class ClientPeer {
    public let name: String
    public private(set) var address: TransportAddress
    public private(set) var credentials = ICECredentials.random()
    public let audioSSRC: UInt32
    public let videoSSRC: UInt32
    public let rtxSSRC: UInt32
    private let fixture: String
    private let context: DTLSContext
    /// The client side of the connection, once an answer was accepted.
    public private(set) var transport: ClientTransport?
    public var ice: ICEClientRole? { transport?.ice }
    public var srtp: OpenSSLSRTPTransform? { transport?.srtp }
    public private(set) var server: TransportAddress?
    /// The server's SSRC on each of our m-lines, by mid (from the answer's `a=ssrc` lines).
    public private(set) var answerSSRCs: [String: UInt32] = [:]
    /// Decrypted RTP received, by SSRC, in arrival order.
    public private(set) var received: [UInt32: [RTPPacket]] = [:]
    /// Decoded RTCP packets received, in arrival order.
    public private(set) var rtcpReceived: [RTCPPacket] = []
    /// Datagrams refused (did not authenticate or parse).
    public private(set) var refused = 0
    /// How the server answered our last connectivity check.
    public var lastCheckOutcome: ICECheckOutcome? { transport?.lastCheckOutcome }
    /// The latest time the test gave us (`receive`, `poll`): what the calls without a time use.
    private var latest = MediaTime(nanoseconds: 0)

    /// `fixture` names the real offer this peer sends (`Tests/Fixtures/sdp/`).
    public init(name: String, port: UInt16, fixture: String = "aiortc-audio-only.sdp", seed: UInt64) throws {
        self.name = name
        self.fixture = fixture
        address = TransportAddress(ipv4: "10.0.0.2", port: port)!
        var generator = SplitMix64(seed: seed)
        audioSSRC = UInt32.random(in: 1...UInt32.max, using: &generator)
        videoSSRC = UInt32.random(in: 1...UInt32.max, using: &generator)
        rtxSSRC = UInt32.random(in: 1...UInt32.max, using: &generator)
        context = try DTLSContext(certificate: DTLSCertificate())
    }

    public var isConnected: Bool { transport?.srtp != nil }

    /// The fixture's offer with this peer's credentials, fingerprint and SSRCs.
    public func offer() throws -> String {
        let text = try Fixtures.sdp(fixture)
        var ssrcs: [String: UInt32] = [:]
        var lines: [String] = []
        // Split on Character.isNewline: "\r\n" is one Character in Swift, not "\r" then "\n".
        for raw in text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline) {
            var line = String(raw)
            if line.hasPrefix("a=ice-ufrag:") { line = "a=ice-ufrag:\(credentials.ufrag)" }
            if line.hasPrefix("a=ice-pwd:") { line = "a=ice-pwd:\(credentials.password)" }
            if line.hasPrefix("a=fingerprint:") {
                guard line.hasPrefix("a=fingerprint:sha-256") else { continue }
                line = "a=fingerprint:\(context.certificate.sdpFingerprint)"
            }
            if line.hasPrefix("a=ssrc:") || line.hasPrefix("a=ssrc-group:") {
                line = replaceSSRCs(in: line, map: &ssrcs)
            }
            lines.append(line)
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// The fixture's SSRCs become ours in order of appearance: audio, camera, camera RTX; any
    /// others (receive-only slots) keep a fixed value derived from the original.
    private func replaceSSRCs(in line: String, map: inout [String: UInt32]) -> String {
        let ours = [audioSSRC, videoSSRC, rtxSSRC]
        return line.split(separator: " ", omittingEmptySubsequences: false).map { word -> String in
            let prefix = word.hasPrefix("a=ssrc:") ? "a=ssrc:" : ""
            let digits = word.dropFirst(prefix.count)
            guard !digits.isEmpty, digits.allSatisfy(\.isNumber) else { return String(word) }
            let key = String(digits)
            if map[key] == nil {
                map[key] = map.count < ours.count ? ours[map.count] : (UInt32(key) ?? 1) ^ audioSSRC
            }
            return prefix + String(map[key] ?? 0)
        }.joined(separator: " ")
    }

    /// Reads the server's ICE credentials, certificate fingerprint, candidate and SSRCs.
    public func accept(answer: String) throws(ClientPeerError) {
        var ufrag: String?, pwd: String?, fingerprint: DTLSFingerprint?, mid: String?
        for raw in answer.split(whereSeparator: \.isNewline) {
            let line = String(raw)
            if ufrag == nil, line.hasPrefix("a=ice-ufrag:") { ufrag = String(line.dropFirst(12)) }
            if pwd == nil, line.hasPrefix("a=ice-pwd:") { pwd = String(line.dropFirst(10)) }
            if line.hasPrefix("a=mid:") { mid = String(line.dropFirst(6)) }
            if let mid, line.hasPrefix("a=ssrc:"), answerSSRCs[mid] == nil,
               let value = UInt32(line.dropFirst(7).prefix { $0 != " " }) {
                answerSSRCs[mid] = value
            }
            if fingerprint == nil, line.hasPrefix("a=fingerprint:") {
                let parts = line.dropFirst(14).split(separator: " ")
                if parts.count == 2 { fingerprint = DTLSFingerprint(algorithm: String(parts[0]), hex: String(parts[1])) }
            }
            if server == nil, line.hasPrefix("a=candidate:") {
                let parts = line.split(separator: " ")
                if parts.count >= 6, let port = UInt16(parts[5]) { server = TransportAddress(ipv4: String(parts[4]), port: port) }
            }
        }
        guard let ufrag, let pwd, let remote = try? ICECredentials(ufrag: ufrag, password: pwd) else {
            throw .answer("ICE credentials")
        }
        guard let fingerprint else { throw .answer("fingerprint") }
        guard let server else { throw .answer("candidate") }
        var configuration = ClientTransportConfiguration(
            localICE: credentials, remoteICE: remote, remote: server, dtlsRole: .client,
            remoteFingerprints: [fingerprint], tieBreaker: UInt64(audioSSRC), rtcpSSRC: SSRC(audioSSRC))
        configuration.checks = nil
        do {
            transport = try ClientTransport(configuration: configuration, dtlsContext: context, now: latest)
        } catch {
            throw .answer("DTLS: \(error)")
        }
    }

    /// ICE restart (RFC 8445 §9): new credentials of ours; the re-offer carries them. The
    /// server's new ones come with `acceptRestart(answer:)`; DTLS and SRTP stay.
    public func restartICE() throws -> String {
        credentials = ICECredentials.random()
        return try offer()
    }

    /// The server's answer to a restart: its new credentials for our next checks.
    public func acceptRestart(answer: String) throws(ClientPeerError) {
        var ufrag: String?, pwd: String?
        for raw in answer.split(whereSeparator: \.isNewline) {
            let line = String(raw)
            if ufrag == nil, line.hasPrefix("a=ice-ufrag:") { ufrag = String(line.dropFirst(12)) }
            if pwd == nil, line.hasPrefix("a=ice-pwd:") { pwd = String(line.dropFirst(10)) }
        }
        guard let ufrag, let pwd, let remote = try? ICECredentials(ufrag: ufrag, password: pwd) else {
            throw .answer("ICE credentials")
        }
        transport?.restartICE(local: credentials, remote: remote, now: latest)
    }

    /// A Binding request toward the server's candidate: with USE-CANDIDATE (a nomination) or
    /// without (a consent check).
    public func connectivityCheck(useCandidate: Bool = true) -> Transmit? {
        transport?.connectivityCheck(useCandidate: useCandidate)
    }

    /// The peer's NAT gives it a new port: everything it sends comes from there from now on.
    public func rebind(port: UInt16) {
        address = TransportAddress(bytes: address.bytes, port: port) ?? address
    }

    /// One datagram from the server: a check's answer starts DTLS, DTLS flights are answered,
    /// the server's own checks too, SRTP and SRTCP are decrypted and kept. Returns what this
    /// peer sends back.
    public func receive(_ datagram: [UInt8], now: MediaTime) -> [Transmit] {
        latest = now
        guard let transport, let server else { return [] }
        let kind = PacketClass(datagram)
        var transmits: [Transmit] = []
        switch transport.receive(datagram, from: server, now: now, transmits: &transmits) {
        case .success(.rtp(let rtp)): received[rtp.header.ssrc.rawValue, default: []].append(rtp)
        case .success(.rtcp(let compound)): rtcpReceived.append(contentsOf: compound)
        case .success(.closed): closedByServerAt = now
        case .failure where kind != .stun && kind != .dtls: refused += 1
        case .success, .failure: break
        }
        return transmits
    }

    /// When the server's close_notify arrived; nil while the association is open.
    public private(set) var closedByServerAt: MediaTime?

    /// Hangs up as a browser does on `close()`: DTLS close_notify to the server; nothing is
    /// sent after it.
    public func hangUp() -> [Transmit] {
        var transmits: [Transmit] = []
        transport?.close(now: latest, transmits: &transmits)
        return transmits
    }

    /// DTLS retransmissions due at `now`.
    public func poll(now: MediaTime) -> [Transmit] {
        latest = now
        var transmits: [Transmit] = []
        _ = transport?.poll(now: now, transmits: &transmits)
        return transmits
    }

    /// An RTP packet on one of our streams, protected for the server.
    public func rtp(_ fields: RTPHeaderFields, payload: [UInt8]) -> Transmit? {
        guard let transport else { return nil }
        var packet: [UInt8] = []
        guard (try? fields.serialize(into: &packet)) != nil else { return nil }
        packet += payload
        return transport.protectRTP(packet).map { ($0, transport.remote) }
    }

    /// An RTCP compound, protected for the server.
    public func rtcp(_ compound: [UInt8]) -> Transmit? {
        guard let transport else { return nil }
        return transport.protectRTCP(compound).map { ($0, transport.remote) }
    }

    /// Forgets the media received so far.
    public func clearReceived() {
        received.removeAll()
        rtcpReceived.removeAll()
    }
}

/// Why a client peer could not use an answer.
public enum ClientPeerError: Error, Equatable {
    case answer(String)
}
