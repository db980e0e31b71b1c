import ChorusCore
import DTLS
import ICELite
import PeerTransport
import RTCP
import RTP
import STUN
import Testing

/// The server's `PeerTransport` and the client's `ClientTransport` exercise each other in
/// process, both ways, with no socket (`TransportPair`): ICE, DTLS in both roles, SRTP and
/// SRTCP, RTCP feedback, consent on a simulated clock, ICE restart, the server's own checks.
@Suite("ClientTransport and PeerTransport: connecting")
struct ClientTransportConnectionTests {
    /// Our check (USE-CANDIDATE, ICE-CONTROLLING) nominates the pair on both sides, then DTLS
    /// keys SRTP alike on both: with the server as DTLS server (the client's offer said
    /// actpass, the answer passive) and as DTLS client (an offer that said passive).
    @Test(arguments: [DTLSRole.server, .client])
    func iceNominatesAndDTLSConnects(serverRole: DTLSRole) throws {
        let pair = try TransportPair(.init(serverDTLSRole: serverRole))
        pair.connect()
        #expect(pair.client.isConnected && pair.server.isConnected)
        #expect(pair.clientEvents.first == .nominated(pair.serverAddress))
        #expect(pair.serverEvents.first == .nominated(pair.clientAddress))
        let profiles = (pair.clientEvents + pair.serverEvents).compactMap { if case .connected(let p) = $0 { p } else { nil } }
        #expect(profiles.count == 2 && profiles[0] == profiles[1])
        #expect(pair.client.lastCheckOutcome == .success(mappedAddress: pair.clientAddress))
        #expect(pair.server.destination == pair.clientAddress)
        #expect(pair.clientDrops.isEmpty && pair.serverDrops.isEmpty)
        let check = try STUNMessage(parsing: pair.sentToServer[0])
        #expect(check.useCandidate && check.iceControlling == 0x1234_5678_9ABC && check.iceControlled == nil)
        #expect(check.usernameString == "\(pair.serverICE.ufrag):\(pair.clientICE.ufrag)")
    }

    /// Unanswered checks are repeated every 100 ms; once one is answered, a plain consent check
    /// (no USE-CANDIDATE) goes every 5 s, and neither side's consent runs out.
    @Test func checksRepeatUntilAnsweredThenBecomeConsentChecks() throws {
        let pair = try TransportPair(.init(receiverReports: false))
        let start = pair.now
        var lost = 0
        pair.dropToServer = { datagram in
            guard PacketClass(datagram) == .stun, lost < 3 else { return false }
            lost += 1
            return true
        }
        pair.connect()
        #expect(pair.client.isConnected)
        #expect(pair.sentToServer.filter { PacketClass($0) == .stun }.count == 4)
        let took = pair.now.nanoseconds(since: start)
        #expect(took >= 300_000_000 && took < 310_000_000, "connected after \(took / 1_000_000) ms")
        let before = pair.sentToServer.count
        pair.run(milliseconds: 12_000)
        let consentChecks = try pair.sentToServer[before...].filter { PacketClass($0) == .stun }.map(STUNMessage.init(parsing:))
        #expect(consentChecks.count == 2 && consentChecks.allSatisfy { !$0.useCandidate && $0.type == .bindingRequest })
        pair.run(milliseconds: 50_000)
        #expect(!pair.serverEvents.contains(.consentExpired) && !pair.clientEvents.contains(.consentExpired))
        #expect(pair.client.isConnected && pair.server.isConnected)
    }

    /// ICE restart (RFC 8445 §9): both sides take new credentials; the client's next checks
    /// carry them and nominate again; DTLS is not redone and media flows on; a check with the
    /// old credentials is refused.
    @Test func anICERestartMovesToTheNewCredentialsAndKeepsDTLS() throws {
        let pair = try TransportPair(.init(receiverReports: false))
        pair.connect()
        let dtlsBefore = pair.sentToServer.filter { PacketClass($0) == .dtls }.count
        let newServer = ICECredentials.random(), newClient = ICECredentials.random()
        pair.server.restartICE(local: newServer, remote: newClient, now: pair.now)
        pair.client.restartICE(local: newClient, remote: newServer, now: pair.now)
        #expect(!pair.client.hasValidPair)
        let eventsBefore = pair.serverEvents.count
        pair.run(milliseconds: 50)
        #expect(pair.client.hasValidPair)
        #expect(pair.serverEvents[eventsBefore...].contains(.nominated(pair.clientAddress)))
        #expect(pair.clientEvents.filter { $0 == .nominated(pair.serverAddress) }.count == 2)
        #expect(pair.sentToServer.filter { PacketClass($0) == .dtls }.count == dtlsBefore)
        let check = try STUNMessage(parsing: try #require(pair.sentToServer.last { PacketClass($0) == .stun }))
        #expect(check.usernameString == "\(newServer.ufrag):\(newClient.ufrag)" && check.useCandidate)
        let old = ICEClientRole(local: pair.clientICE, remote: pair.serverICE, tieBreaker: 1)
        pair.deliverToServer(old.bindingRequest(transactionID: .random(), useCandidate: true), from: pair.clientAddress)
        #expect(pair.serverDrops.last == .iceRefused)
        pair.fromClient { #expect(pair.client.sendRTP(TransportPair.rtp(ssrc: pair.clientSSRC, sequence: 1), transmits: &$0)) }
        pair.run(milliseconds: 1)
        #expect(pair.serverRTP.count == 1)
    }

    /// NAT rebinding: the client's media starts coming from a new port. The server checks the
    /// new address with a Binding request of its own, the client answers it (as it answers a
    /// full agent's checks), and the server moves media there once the old address is silent.
    @Test func theClientAnswersTheServersOwnCheckAndMediaFollowsItsNewAddress() throws {
        let pair = try TransportPair(.init(receiverReports: false))
        pair.connect()
        let old = pair.clientAddress
        let moved = TransportAddress(ipv4: "192.0.2.10", port: 50_999)!
        pair.clientAddress = moved
        var sequence: UInt16 = 0
        pair.run(milliseconds: 1_000) {
            guard pair.now.nanoseconds % 20_000_000 == 0 else { return }
            sequence &+= 1
            pair.fromClient { pair.client.sendRTP(TransportPair.rtp(ssrc: pair.clientSSRC, sequence: sequence), transmits: &$0) }
        }
        #expect(pair.serverEvents.contains(.probing(moved)))
        #expect(pair.serverEvents.contains(.addressValidated(moved)))
        #expect(pair.serverEvents.contains(.pathChanged(from: old, to: moved)))
        #expect(pair.server.destination == moved)
        let answers = try pair.sentToServer.filter { PacketClass($0) == .stun && $0[0] == 0x01 }.map(STUNMessage.init(parsing:))
        #expect(answers.count >= 1 && answers.allSatisfy { $0.type == .bindingSuccessResponse })
    }

    /// A full agent that made the offer (as Janus's subscriber connections do) controls ICE and
    /// is the DTLS client: its DTLS is refused until it proved our credentials with a check,
    /// which we answer; our own checks say ICE-CONTROLLED and never nominate.
    @Test func aControlledClientAnswersTheControllingPeerFirst() throws {
        let now = MediaTime.seconds(5)
        let peer = TransportAddress(ipv4: "192.0.2.7", port: 8_000)!
        let peerContext = try DTLSContext(certificate: DTLSCertificate(commonName: "peer"))
        let ourContext = try DTLSContext(certificate: DTLSCertificate(commonName: "us"))
        let peerICE = ICECredentials.random(), ourICE = ICECredentials.random()
        var configuration = ClientTransportConfiguration(
            localICE: ourICE, remoteICE: peerICE, remote: peer, dtlsRole: .server,
            remoteFingerprints: [DTLSFingerprint(algorithm: .sha256, digest: peerContext.certificate.fingerprint)],
            tieBreaker: 5, rtcpSSRC: SSRC(1))
        configuration.isControlling = false
        let client = try ClientTransport(configuration: configuration, dtlsContext: ourContext, now: now)
        let peerDTLS = try DTLSEndpoint(context: peerContext, role: .client, remoteFingerprints: [
            DTLSFingerprint(algorithm: .sha256, digest: ourContext.certificate.fingerprint),
        ])
        var transmits: [Transmit] = []
        let hello = peerDTLS.start(now: now).datagrams
        #expect(client.receive(hello[0], from: peer, now: now, transmits: &transmits) == .failure(.dtlsBeforeICE))
        let peerRole = ICEClientRole(local: peerICE, remote: ourICE, tieBreaker: 99, isControlling: true)
        let id = TransactionID.random()
        #expect(client.receive(peerRole.bindingRequest(transactionID: id, useCandidate: true), from: peer, now: now,
                               transmits: &transmits) == .success(nil))
        #expect(transmits.count == 1 && peerRole.validateResponse(transmits[0].datagram, transactionID: id)
            == .success(mappedAddress: peer))
        transmits.removeAll()
        _ = client.poll(now: now, transmits: &transmits)
        let ours = try STUNMessage(parsing: try #require(transmits.first).datagram)
        #expect(ours.iceControlled == 5 && ours.iceControlling == nil && !ours.useCandidate)
        transmits.removeAll()
        var toClient = hello
        var events: [TransportEvent] = []
        for _ in 0..<10 where !toClient.isEmpty {
            for datagram in toClient {
                if case .success(let event?) = client.receive(datagram, from: peer, now: now, transmits: &transmits) {
                    events.append(event)
                }
            }
            toClient = transmits.flatMap { peerDTLS.handle($0.datagram, now: now).datagrams }
            transmits.removeAll()
        }
        #expect(client.isConnected && peerDTLS.state == .connected)
        #expect(events.contains { if case .connected = $0 { true } else { false } })
    }
}

@Suite("ClientTransport and PeerTransport: consent on a simulated clock")
struct ClientTransportConsentTests {
    /// The server stops answering: 30 s after the last answered check the client's consent is
    /// gone (said once), and from then on it sends nothing at all.
    @Test func theClientStopsWhenTheServerStopsAnswering() throws {
        let pair = try TransportPair(.init(receiverReports: false))
        pair.connect()
        pair.dropToClient = { PacketClass($0) == .stun }
        pair.run(milliseconds: 29_000)
        #expect(!pair.clientEvents.contains(.consentExpired))
        pair.fromClient { #expect(pair.client.sendRTP(TransportPair.rtp(ssrc: pair.clientSSRC, sequence: 1), transmits: &$0)) }
        pair.run(milliseconds: 1_500)
        #expect(pair.clientEvents.filter { $0 == .consentExpired }.count == 1)
        let sent = pair.sentToServer.count
        pair.fromClient { #expect(!pair.client.sendRTP(TransportPair.rtp(ssrc: pair.clientSSRC, sequence: 2), transmits: &$0)) }
        pair.run(milliseconds: 10_000)
        #expect(pair.sentToServer.count == sent)
        #expect(pair.clientEvents.filter { $0 == .consentExpired }.count == 1)
    }

    /// The client falls silent: the server's consent runs out 30 s after the last check it
    /// answered, and so does the client's (its checks go unanswered too).
    @Test func theServerEndsACallWhoseClientFellSilent() throws {
        let pair = try TransportPair(.init(receiverReports: false))
        pair.connect()
        pair.run(milliseconds: 12_000)  // consent checks at 5 s and 10 s
        pair.dropToServer = { _ in true }
        pair.run(milliseconds: 27_500)
        #expect(!pair.serverEvents.contains(.consentExpired))
        pair.run(milliseconds: 1_000)
        #expect(pair.serverEvents.contains(.consentExpired) && pair.clientEvents.contains(.consentExpired))
    }

    /// A join that never gets an answer: a check every 100 ms for 30 s, then consent is lost.
    @Test func aCheckThatIsNeverAnsweredEndsAfterTheTimeout() throws {
        let pair = try TransportPair(.init(receiverReports: false))
        pair.dropToServer = { _ in true }
        pair.run(milliseconds: 29_900)
        #expect(!pair.clientEvents.contains(.consentExpired))
        pair.run(milliseconds: 200)
        #expect(pair.clientEvents == [.consentExpired])
        #expect(pair.sentToServer.count == 300)
    }
}
