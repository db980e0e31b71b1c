import ChorusCore
import ICELite
import STUN
import Testing

/// The client answering a full-ICE server's own checks (what Janus/libnice does before it uses
/// a pair): signed success for a valid check, role conflict per RFC 8445 §7.3.1.1, nothing for
/// checks that are not ours.
@Suite("ICE client role: answering the peer's checks")
struct ICEClientRoleResponderTests {
    static let client = try! ICECredentials(ufrag: "cliC", password: "clientPasswordOf24Chars/")
    static let server = try! ICECredentials(ufrag: "janS", password: "serverPassword+22chars")
    static let source = TransportAddress(ipv4: "198.18.0.2", port: 20_000)!
    let role = ICEClientRole(local: client, remote: server, tieBreaker: 1_000)
    /// The server's view: its checks carry USERNAME `cliC:janS` under the client's password,
    /// and it validates our responses with that same password.
    let serverView = ICEClientRole(local: server, remote: client, tieBreaker: 5)

    /// A check as the controlled server sends it: ICE-CONTROLLED, PRIORITY, USE-CANDIDATE off.
    func controlledCheck(_ id: TransactionID, key password: String = client.password) -> [UInt8] {
        var builder = STUNMessageBuilder(type: .bindingRequest, transactionID: id, capacity: 128)
        builder.appendUsername(Username.ice(receiverUfrag: Self.client.ufrag, senderUfrag: Self.server.ufrag))
        builder.appendPriority(ICEClientRole.candidatePriority())
        builder.appendICEControlled(tieBreaker: 5)
        builder.appendMessageIntegrity(key: MessageIntegrity.shortTermKey(password: password))
        builder.appendFingerprint()
        return builder.finish()
    }

    @Test func answersTheServersCheckWithItsMappedAddress() throws {
        let id = TransactionID.random()
        let response = try #require(role.respond(to: controlledCheck(id), from: Self.source))
        #expect(serverView.validateResponse(response, transactionID: id) == .success(mappedAddress: Self.source))
    }

    @Test func dropsChecksThatAreNotOurs() {
        let id = TransactionID.random()
        #expect(role.respond(to: controlledCheck(id, key: "wrongPasswordOf24Chars//"), from: Self.source) == nil)
        #expect(role.respond(to: [0x00, 0x01, 0x00], from: Self.source) == nil)
        // A response (our own check's answer) is not a request to answer.
        let ours = role.bindingRequest(transactionID: id, useCandidate: true)
        #expect(role.respond(to: ours, from: Self.source) == nil)
    }

    /// Both sides controlling: the larger tie-breaker keeps the role. Ours (1000) beats 5, so
    /// the peer gets 487; a peer with a larger tie-breaker is answered normally.
    @Test func roleConflictFollowsTheTieBreaker() throws {
        let id = TransactionID.random()
        let weaker = try #require(role.respond(to: serverView.bindingRequest(transactionID: id, useCandidate: false),
                                               from: Self.source))
        #expect(serverView.validateResponse(weaker, transactionID: id) == .errorResponse(.roleConflict))
        let stronger = ICEClientRole(local: Self.server, remote: Self.client, tieBreaker: 2_000)
        let reply = try #require(role.respond(to: stronger.bindingRequest(transactionID: id, useCandidate: false),
                                              from: Self.source))
        #expect(stronger.validateResponse(reply, transactionID: id) == .success(mappedAddress: Self.source))
    }
}

/// The client as the controlled side (the peer made the offer, as Janus does for a subscriber).
@Suite("ICE client role: controlled")
struct ICEClientRoleControlledTests {
    static let client = try! ICECredentials(ufrag: "cliC", password: "clientPasswordOf24Chars/")
    static let server = try! ICECredentials(ufrag: "janS", password: "serverPassword+22chars")
    static let source = TransportAddress(ipv4: "198.18.0.2", port: 20_000)!

    /// Our checks say ICE-CONTROLLED and never nominate, even when asked to.
    @Test func checksAreControlledAndNeverNominate() throws {
        let role = ICEClientRole(local: Self.client, remote: Self.server, tieBreaker: 7, isControlling: false)
        let request = try STUNMessage(parsing: role.bindingRequest(transactionID: .random(), useCandidate: true))
        #expect(request.iceControlled == 7 && request.iceControlling == nil && !request.useCandidate)
    }

    /// The controlling peer's nominating check is answered; a peer that also claims to be
    /// controlled gets 487 only when its tie-breaker is larger (RFC 8445 §7.3.1.1).
    @Test func answersTheControllingPeer() throws {
        let role = ICEClientRole(local: Self.client, remote: Self.server, tieBreaker: 100, isControlling: false)
        let peer = ICEClientRole(local: Self.server, remote: Self.client, tieBreaker: 5)
        let id = TransactionID.random()
        let reply = try #require(role.respond(to: peer.bindingRequest(transactionID: id, useCandidate: true),
                                              from: Self.source))
        #expect(peer.validateResponse(reply, transactionID: id) == .success(mappedAddress: Self.source))

        let controlledLarger = ICEClientRole(local: Self.server, remote: Self.client, tieBreaker: 200, isControlling: false)
        let conflict = try #require(role.respond(to: controlledLarger.bindingRequest(transactionID: id, useCandidate: false),
                                                 from: Self.source))
        #expect(controlledLarger.validateResponse(conflict, transactionID: id) == .errorResponse(.roleConflict))
        let controlledSmaller = ICEClientRole(local: Self.server, remote: Self.client, tieBreaker: 50, isControlling: false)
        let fine = try #require(role.respond(to: controlledSmaller.bindingRequest(transactionID: id, useCandidate: false),
                                             from: Self.source))
        #expect(controlledSmaller.validateResponse(fine, transactionID: id) == .success(mappedAddress: Self.source))
    }
}
