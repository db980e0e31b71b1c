import ChorusCore
import ChorusTestSupport
import ICELite
import PeerTransport
import RTP
import STUN
import Testing

/// Whatever the network brings the client is dropped with its reason, never trapped on, and
/// leaves the connection working (principle 11, for the client side too).
@Suite("ClientTransport: hostile and malformed input")
struct ClientTransportHostileInputTests {
    /// Before the handshake: SRTP without keys, DTLS before any check, a stranger's address.
    @Test func earlyDatagramsAreRefusedWithTheirReasons() throws {
        let pair = try TransportPair(.init(receiverReports: false))
        #expect(pair.deliverToClient(TransportPair.rtp(ssrc: pair.serverSSRC, sequence: 1)) == .failure(.srtpNotReady))
        #expect(pair.deliverToClient([0x81, 201, 0, 1, 0, 0, 0, 1]) == .failure(.srtpNotReady))
        #expect(pair.deliverToClient([22, 254, 253, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]) == .failure(.dtlsBeforeICE))
        let stranger = TransportAddress(ipv4: "198.51.100.9", port: 3_478)!
        #expect(pair.deliverToClient(TransportPair.rtp(ssrc: pair.serverSSRC, sequence: 1), from: stranger)
            == .failure(.notValidated))
        #expect(pair.deliverToClient([]) == .failure(.unknownClass) && pair.deliverToClient([0xFF, 1]) == .failure(.unknownClass))
        #expect(pair.client.counters.packetsDropped == 6)
        pair.connect()
        #expect(pair.client.isConnected)
    }

    /// SRTP that does not authenticate (a flipped bit, a forged tag) or comes twice (a replay)
    /// is refused; the real packet after them still arrives.
    @Test func forgedAndReplayedSRTPIsRefused() throws {
        let pair = try TransportPair(.init(receiverReports: false))
        pair.connect()
        var transmits: [Transmit] = []
        for sequence in UInt16(1)...3 {
            pair.server.sendRTP(TransportPair.rtp(ssrc: pair.serverSSRC, sequence: sequence), now: pair.now, transmits: &transmits)
        }
        let packets = transmits.map(\.datagram)
        guard case .success(.rtp?) = pair.deliverToClient(packets[0]) else {
            Issue.record("the first packet did not arrive")
            return
        }
        #expect(pair.deliverToClient(packets[0]) == .failure(.srtpReplay))
        var flipped = packets[1]
        flipped[20] ^= 0x01
        #expect(pair.deliverToClient(flipped) == .failure(.srtpAuthentication))
        var forged = packets[1]
        forged[forged.count - 1] ^= 0xFF
        #expect(pair.deliverToClient(forged) == .failure(.srtpAuthentication))
        #expect(pair.deliverToClient(Array(packets[1].prefix(14))) == .failure(.srtpAuthentication))
        guard case .success(.rtp(let rtp)?) = pair.deliverToClient(packets[1]) else {
            Issue.record("the genuine packet was refused after the forgeries")
            return
        }
        #expect(rtp.header.sequenceNumber == 2)
    }

    /// A response to our check must be ours and signed with the server's password: one signed
    /// with another, or naming another transaction, proves nothing and changes nothing.
    @Test func aCheckResponseNotSignedByTheServerIsRefused() throws {
        let pair = try TransportPair(.init(receiverReports: false, checks: nil))
        let check = pair.client.connectivityCheck(useCandidate: true)
        let request = try STUNMessage(parsing: check.datagram)
        var builder = STUNMessageBuilder(type: .bindingSuccessResponse, transactionID: request.transactionID)
        builder.appendXORMappedAddress(pair.clientAddress)
        builder.appendMessageIntegrity(key: MessageIntegrity.shortTermKey(password: "not the server's password!"))
        builder.appendFingerprint()
        #expect(pair.deliverToClient(builder.finish()) == .failure(.iceRefused))
        #expect(pair.client.lastCheckOutcome == .invalid(.badIntegrity) && !pair.client.hasValidPair)
        var other = STUNMessageBuilder(type: .bindingSuccessResponse, transactionID: .random())
        other.appendXORMappedAddress(pair.clientAddress)
        other.appendMessageIntegrity(key: MessageIntegrity.shortTermKey(password: pair.serverICE.password))
        other.appendFingerprint()
        #expect(pair.deliverToClient(other.finish()) == .failure(.iceRefused))
        // A check the stranger signs is not answered either.
        let impostor = ICEClientRole(local: pair.serverICE, remote: ICECredentials.random(), tieBreaker: 3)
        #expect(pair.deliverToClient(impostor.bindingRequest(transactionID: .random(), useCandidate: true))
            == .failure(.iceRefused))
        #expect(pair.sentToServer.isEmpty)
        // The genuine answer still counts.
        var transmits: [Transmit] = []
        _ = pair.server.receive(check.datagram, from: pair.clientAddress, now: pair.now, transmits: &transmits)
        #expect(pair.deliverToClient(transmits[0].datagram) == .success(.nominated(pair.serverAddress)))
    }

    /// Every prefix of every datagram the server sent while connecting and talking, and random
    /// bytes behind each first-byte class of RFC 7983, fed to a connected client and to a
    /// fresh one: each is refused or ignored, none traps, none is taken for media, and the
    /// connection still carries media after.
    @Test func truncationsAndRandomBytesNeverTrapOrPassAsMedia() throws {
        let pair = try TransportPair()
        pair.connect()
        pair.run(milliseconds: 1_500)  // reports and consent checks too
        pair.fromServer { pair.server.sendRTP(TransportPair.rtp(ssrc: pair.serverSSRC, sequence: 1), now: pair.now, transmits: &$0) }
        pair.run(milliseconds: 1)
        var hostile = pair.sentToClient.flatMap(truncations(of:))
        var generator = SplitMix64(seed: 43)
        for first in [UInt8(0x00), 0x01, 0x16, 0x17, 0x80, 0x81, 0xC8, 0x40] {
            for _ in 0..<50 {
                let count = Int.random(in: 1..<300, using: &generator)
                hostile.append([first] + (1..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
            }
        }
        let fresh = try TransportPair(.init(receiverReports: false))
        var accepted = 0
        for datagram in hostile {
            for side in [pair, fresh] {
                switch side.deliverToClient(datagram) {
                case .success(.rtp?), .success(.rtcp?), .success(.connected?), .success(.nominated?): accepted += 1
                case .success, .failure: break
                }
            }
        }
        #expect(hostile.count > 1_000 && accepted == 0)
        #expect(pair.client.isConnected && !fresh.client.isConnected)
        pair.fromServer { pair.server.sendRTP(TransportPair.rtp(ssrc: pair.serverSSRC, sequence: 2), now: pair.now, transmits: &$0) }
        let before = pair.clientRTP.count
        pair.run(milliseconds: 1)
        #expect(pair.clientRTP.count == before + 1)
    }
}
