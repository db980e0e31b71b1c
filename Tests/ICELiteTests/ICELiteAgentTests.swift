import ChorusCore
import ICELite
import STUN
import Testing

/// The ICE-lite agent against our own client role, in process, on a simulated clock.
@Suite("ICE-lite agent")
struct ICELiteAgentTests {
    static let server = try! ICECredentials(ufrag: "srvA", password: "serverPasswordOf24Chars+")
    static let browser = try! ICECredentials(ufrag: "brwB1234", password: "browserPassword/22chars")
    static let source = TransportAddress(ipv4: "198.51.100.20", port: 50_000)!
    static let otherSource = TransportAddress(ipv4: "198.51.100.21", port: 50_001)!
    static let ipv6Source = TransportAddress(
        bytes: [0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x42], port: 61_000)!

    var agent = ICELiteAgent(local: server, remote: browser)
    let client = ICEClientRole(local: browser, remote: server, tieBreaker: 0x0123_4567_89AB_CDEF)

    /// Sends one check from `source` and returns the action plus what the client makes of it.
    mutating func check(useCandidate: Bool, from source: TransportAddress = source, at time: MediaTime = .at(0),
                        client: ICEClientRole? = nil) -> (ICELiteAction, ICECheckOutcome?) {
        let client = client ?? self.client
        let id = TransactionID.random()
        let request = client.bindingRequest(transactionID: id, useCandidate: useCandidate)
        let action = agent.handle(request, from: source, now: time)
        switch action {
        case .respond(let bytes, _), .respondAndNominate(let bytes, _), .error(let bytes, _, _):
            return (action, client.validateResponse(bytes, transactionID: id))
        case .drop, .keepalive:
            return (action, nil)
        }
    }

    @Test mutating func nominatingCheckIsAnsweredAndSelectsTheSource() {
        #expect(agent.nominatedAddress == nil)
        #expect(agent.nextDeadline == nil)
        let (action, outcome) = check(useCandidate: true)
        guard case .respondAndNominate(_, let destination) = action else {
            Issue.record("expected a nomination, got \(action)")
            return
        }
        #expect(destination == Self.source)
        #expect(outcome == .success(mappedAddress: Self.source))
        #expect(agent.nominatedAddress == Self.source)
        #expect(agent.nextDeadline == .at(30))
    }

    @Test mutating func checkWithoutUseCandidateIsAnsweredWithoutNomination() {
        let (action, outcome) = check(useCandidate: false)
        guard case .respond(_, let destination) = action else {
            Issue.record("expected a plain response, got \(action)")
            return
        }
        #expect(destination == Self.source)
        #expect(outcome == .success(mappedAddress: Self.source))
        #expect(agent.nominatedAddress == nil)
        #expect(agent.nextDeadline == nil)
    }

    @Test mutating func ipv6SourceIsMappedAndNominated() throws {
        let (action, outcome) = check(useCandidate: true, from: Self.ipv6Source)
        guard case .respondAndNominate(let bytes, let destination) = action else {
            Issue.record("expected a nomination, got \(action)")
            return
        }
        #expect(destination == Self.ipv6Source)
        #expect(outcome == .success(mappedAddress: Self.ipv6Source))
        #expect(agent.nominatedAddress == Self.ipv6Source)
        let response = try STUNMessage(parsing: bytes)
        #expect(response.type == .bindingSuccessResponse)
        #expect(response.xorMappedAddress?.family == .ipv6)
        #expect(response.fingerprintIsValid == true)
    }

    @Test mutating func wrongPasswordGetsNoSuccess() throws {
        let impostorView = try ICECredentials(ufrag: Self.server.ufrag, password: "notTheServerPassword22")
        let impostor = ICEClientRole(local: Self.browser, remote: impostorView, tieBreaker: 1)
        let before = agent
        let (action, outcome) = check(useCandidate: true, client: impostor)
        guard case .error(let bytes, _, let code) = action else {
            Issue.record("expected 401, got \(action)")
            return
        }
        #expect(code == 401)
        #expect(outcome == .unauthenticatedErrorResponse(.unauthenticated))
        #expect(try !STUNMessage(parsing: bytes).hasMessageIntegrity)
        #expect(agent == before)
    }

    @Test mutating func unknownUfragIsDroppedWithoutState() throws {
        let strangerView = try ICECredentials(ufrag: "zzzz", password: Self.server.password)
        let before = agent
        let stranger = ICEClientRole(local: Self.browser, remote: strangerView, tieBreaker: 1)
        let (action, _) = check(useCandidate: true, client: stranger)
        #expect(action == .drop(reason: .unknownUsername))
        #expect(agent == before)
        // Right local ufrag, wrong remote half: not this session either.
        let otherBrowser = try ICECredentials(ufrag: "other000", password: Self.browser.password)
        let otherSession = ICEClientRole(local: otherBrowser, remote: Self.server, tieBreaker: 1)
        let (second, _) = check(useCandidate: true, client: otherSession)
        #expect(second == .drop(reason: .unknownUsername))
        #expect(agent == before)
    }

    @Test mutating func badFingerprintIsDropped() {
        var request = client.bindingRequest(transactionID: .random(), useCandidate: true)
        request[request.count - 1] ^= 0xFF
        let before = agent
        #expect(agent.handle(request, from: Self.source, now: .at(0)) == .drop(reason: .badFingerprint))
        #expect(agent == before)
    }

    @Test mutating func consentExpiresAfterThirtySecondsAndIsRefreshedByChecks() {
        _ = check(useCandidate: true, at: .at(10))
        #expect(agent.nextDeadline == .at(40))
        #expect(!agent.consentExpired(now: .at(39.999)))
        // A check from another address does not renew consent for the selected one.
        _ = check(useCandidate: false, from: Self.otherSource, at: .at(25))
        #expect(agent.nextDeadline == .at(40))
        // A consent check (no USE-CANDIDATE) from the selected address does.
        _ = check(useCandidate: false, at: .at(35))
        #expect(agent.nextDeadline == .at(65))
        #expect(!agent.consentExpired(now: .at(64.999)))
        #expect(agent.consentExpired(now: .at(65)))
        #expect(agent.consentExpired(now: .at(1000)))
        // A late check revives it.
        _ = check(useCandidate: false, at: .at(70))
        #expect(!agent.consentExpired(now: .at(70)))
        #expect(agent.nextDeadline == .at(100))
    }

    /// A Binding indication as libnice sends it (FINGERPRINT only), or signed with the server's
    /// password as some stacks do.
    func indication(signedWith password: String?) -> [UInt8] {
        var builder = STUNMessageBuilder(type: .bindingIndication, transactionID: .random(), capacity: 128)
        if let password {
            builder.appendUsername(Array("\(Self.server.ufrag):\(Self.browser.ufrag)".utf8))
            builder.appendMessageIntegrity(key: MessageIntegrity.shortTermKey(password: password))
        }
        builder.appendFingerprint()
        return builder.finish()
    }

    @Test mutating func indicationsAreKeepalivesAndOnlySignedOnesFromTheSelectedAddressRenewConsent() {
        let unsigned = indication(signedWith: nil)
        let signed = indication(signedWith: Self.server.password)
        let forged = indication(signedWith: "notTheServerPassword22")
        // Before nomination nothing renews, but an indication is never a drop.
        #expect(agent.handle(signed, from: Self.source, now: .at(1)) == .keepalive(renewedConsent: false))
        _ = check(useCandidate: true, at: .at(10))
        #expect(agent.handle(unsigned, from: Self.source, now: .at(20)) == .keepalive(renewedConsent: false))
        #expect(agent.handle(forged, from: Self.source, now: .at(20)) == .keepalive(renewedConsent: false))
        #expect(agent.handle(signed, from: Self.otherSource, now: .at(20)) == .keepalive(renewedConsent: false))
        #expect(agent.nextDeadline == .at(40))
        #expect(agent.handle(signed, from: Self.source, now: .at(20)) == .keepalive(renewedConsent: true))
        #expect(agent.nextDeadline == .at(50))
    }

    @Test mutating func authenticatedMediaFromTheSelectedAddressRenewsConsent() {
        agent.refreshConsent(from: Self.source, now: .at(5))
        #expect(agent.nextDeadline == nil, "no consent before nomination")
        _ = check(useCandidate: true, at: .at(10))
        agent.refreshConsent(from: Self.otherSource, now: .at(30))
        #expect(agent.nextDeadline == .at(40))
        agent.refreshConsent(from: Self.source, now: .at(30))
        #expect(agent.nextDeadline == .at(60))
    }

    @Test mutating func noConsentBeforeNominationAndFailedChecksDoNotRefresh() throws {
        #expect(!agent.consentExpired(now: .at(1_000_000)))
        _ = check(useCandidate: true, at: .at(0))
        let impostorView = try ICECredentials(ufrag: Self.server.ufrag, password: "notTheServerPassword22")
        let impostor = ICEClientRole(local: Self.browser, remote: impostorView, tieBreaker: 1)
        _ = check(useCandidate: false, at: .at(29), client: impostor)
        #expect(agent.consentExpired(now: .at(30)))
    }

    @Test mutating func latestNominationWins() {
        _ = check(useCandidate: true, from: Self.source)
        let (action, _) = check(useCandidate: true, from: Self.otherSource, at: .at(1))
        guard case .respondAndNominate(_, let destination) = action else {
            Issue.record("expected a nomination, got \(action)")
            return
        }
        #expect(destination == Self.otherSource)
        #expect(agent.nominatedAddress == Self.otherSource)
        #expect(agent.nextDeadline == .at(31))
    }

    @Test func credentialsAreValidated() {
        let password = String(repeating: "p", count: 22)
        #expect(throws: ICECredentialsError.invalidUfrag) { try ICECredentials(ufrag: "abc", password: password) }
        #expect(throws: ICECredentialsError.invalidUfrag) { try ICECredentials(ufrag: "ab:cd", password: password) }
        #expect(throws: ICECredentialsError.invalidUfrag) {
            try ICECredentials(ufrag: String(repeating: "u", count: 257), password: password)
        }
        #expect(throws: ICECredentialsError.invalidPassword) {
            try ICECredentials(ufrag: "abcd", password: String(password.dropLast()))
        }
        #expect(throws: ICECredentialsError.invalidPassword) {
            try ICECredentials(ufrag: "abcd", password: String(repeating: "é", count: 22))
        }
        #expect(throws: ICECredentialsError.invalidUfrag) {
            try ICELiteAgent(localUfrag: "ok12", localPassword: String(repeating: "p", count: 22),
                             remoteUfrag: "bad ufrag", remotePassword: String(repeating: "p", count: 22))
        }
        let random = ICECredentials.random()
        #expect((try? ICECredentials(ufrag: random.ufrag, password: random.password)) == random)
        #expect(random.ufrag.count == 8 && random.password.count == 24)
        #expect(ICECredentials.random() != random)
    }

    @Test func candidatePriorityFollowsRFC8445() {
        // A host candidate's textbook priority.
        #expect(ICEClientRole.candidatePriority(typePreference: 126, localPreference: 65535, componentID: 1)
                == 2_130_706_431)
        #expect(ICEClientRole.candidatePriority() == 110 << 24 | 65535 << 8 | 255)
    }
}
