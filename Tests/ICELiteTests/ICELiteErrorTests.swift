import ChorusCore
import ICELite
import STUN
import Testing

/// Error responses and drops: what an ICE-lite agent answers when a check is not acceptable,
/// and that hostile input never traps nor creates state.
@Suite("ICE-lite agent errors and drops")
struct ICELiteErrorTests {
    static let server = try! ICECredentials(ufrag: "srvA", password: "serverPasswordOf24Chars+")
    static let browser = try! ICECredentials(ufrag: "brwB1234", password: "browserPassword/22chars")
    static let source = TransportAddress(ipv4: "192.0.2.7", port: 40_000)!
    static let serverKey = MessageIntegrity.shortTermKey(password: server.password)

    var agent = ICELiteAgent(local: server, remote: browser, software: "Chorus")

    /// A request built by hand, signed with the server's password unless told otherwise.
    static func request(type: STUNMessageType = .bindingRequest, username: String? = "srvA:brwB1234",
                        priority: UInt32? = 1, controlling: Bool = true, controlled: Bool = false,
                        extra: STUNAttributeType? = nil, sign: Bool = true, fingerprint: Bool = true) -> [UInt8] {
        var builder = STUNMessageBuilder(type: type, transactionID: TransactionID(high: 7, low: 8))
        if let username { builder.appendUsername(username) }
        if let priority { builder.appendPriority(priority) }
        if controlling { builder.appendICEControlling(tieBreaker: 5) }
        if controlled { builder.appendICEControlled(tieBreaker: 5) }
        if let extra { builder.appendAttribute(extra, value: [1, 2]) }
        if sign { builder.appendMessageIntegrity(key: serverKey) }
        if fingerprint { builder.appendFingerprint() }
        return builder.finish()
    }

    /// Handles `bytes` and returns the parsed error response with its code, or nil.
    mutating func errorResponse(_ bytes: [UInt8]) throws -> (STUNMessage, Int)? {
        let action = agent.handle(bytes, from: Self.source, now: .at(1))
        guard case .error(let response, let destination, let code) = action else { return nil }
        #expect(destination == Self.source)
        let message = try STUNMessage(parsing: response)
        #expect(message.type == .bindingErrorResponse)
        #expect(message.transactionID == TransactionID(high: 7, low: 8))
        #expect(message.errorCode?.code == code)
        #expect(message.fingerprintIsValid == true)
        #expect(message.software == "Chorus")
        return (message, code)
    }

    @Test mutating func rfc5769SampleRequestIsARoleConflict() throws {
        // The RFC's request carries ICE-CONTROLLED; a lite agent must stay controlled, so 487.
        var rfcAgent = try ICELiteAgent(localUfrag: "evtj", localPassword: "VOkJxbRl1RmTxUk/WvJxBt",
                                        remoteUfrag: "h6vY", remotePassword: "unusedRemotePassword22")
        let request = try STUNMessage(parsing: rfcRequest)
        guard case .error(let bytes, _, 487) = rfcAgent.handle(rfcRequest, from: Self.source, now: .at(0)) else {
            Issue.record("expected 487")
            return
        }
        let response = try STUNMessage(parsing: bytes)
        #expect(response.transactionID == request.transactionID)
        #expect(response.errorCode == .roleConflict)
        #expect(response.hasValidMessageIntegrity(key: Array("VOkJxbRl1RmTxUk/WvJxBt".utf8)))
        #expect(rfcAgent.nominatedAddress == nil)
    }

    @Test mutating func missingPriorityOrRoleIsABadRequestWithIntegrity() throws {
        for bytes in [Self.request(priority: nil), Self.request(controlling: false),
                      Self.request(controlling: true, controlled: true)] {
            let (message, code) = try #require(try errorResponse(bytes))
            #expect(code == 400)
            #expect(message.hasValidMessageIntegrity(key: Self.serverKey))
        }
        #expect(agent.nominatedAddress == nil)
    }

    @Test mutating func missingCredentialsIsABadRequestWithoutIntegrity() throws {
        for bytes in [Self.request(username: nil), Self.request(sign: false)] {
            let (message, code) = try #require(try errorResponse(bytes))
            #expect(code == 400)
            #expect(!message.hasMessageIntegrity)
        }
    }

    @Test mutating func unknownComprehensionRequiredAttributeIs420() throws {
        let (message, code) = try #require(try errorResponse(Self.request(extra: STUNAttributeType(rawValue: 0x0033))))
        #expect(code == 420)
        #expect(message.unknownAttributes == [STUNAttributeType(rawValue: 0x0033)])
        #expect(message.hasValidMessageIntegrity(key: Self.serverKey))
        // Comprehension-optional unknowns (e.g. GOOG-NETWORK-INFO) are ignored.
        let googNetworkInfo = Self.request(extra: STUNAttributeType(rawValue: 0xC057))
        let optional = agent.handle(googNetworkInfo, from: Self.source, now: .at(1))
        guard case .respond = optional else {
            Issue.record("expected success, got \(optional)")
            return
        }
    }

    @Test mutating func otherDatagramsAreDroppedByKind() {
        let allocate = STUNMethod(rawValue: 0x003)!  // TURN Allocate
        let cases: [([UInt8], ICEDropReason)] = [
            ([], .notSTUN),
            ([0x80, 0x60, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1], .notSTUN),      // RTP
            ([0x16, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0], .notSTUN),   // DTLS
            (Array(Self.request().prefix(19)), .malformed),
            (Array(Self.request().dropLast(4)), .malformed),
            (Self.request(type: .bindingSuccessResponse), .notARequest),
            (Self.request(type: .bindingErrorResponse), .notARequest),
            (Self.request(fingerprint: false), .badFingerprint),
            (Self.request(type: STUNMessageType(method: allocate, messageClass: .request)), .unsupportedMethod),
        ]
        let before = agent
        for (bytes, reason) in cases {
            #expect(agent.handle(bytes, from: Self.source, now: .at(0)) == .drop(reason: reason))
        }
        #expect(agent == before)
    }

    @Test mutating func noMutationOfAValidCheckSucceedsOrTraps() {
        let valid = ICEClientRole(local: Self.browser, remote: Self.server, tieBreaker: 3)
            .bindingRequest(transactionID: TransactionID(high: 1, low: 1), useCandidate: true)
        var generator = SplitMix64(seed: 8445)
        for _ in 0..<5_000 {
            var bytes = valid
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                bytes[index] = UInt8.random(in: .min ... .max, using: &generator)
            }
            var fresh = ICELiteAgent(local: Self.server, remote: Self.browser)
            let action = fresh.handle(bytes, from: Self.source, now: .at(0))
            if bytes != valid, case .respond = action { Issue.record("mutated check accepted") }
            if bytes != valid, case .respondAndNominate = action { Issue.record("mutated check nominated") }
            if bytes != valid { #expect(fresh.nominatedAddress == nil) }
        }
        for length in 0..<valid.count {
            let action = agent.handle(Array(valid.prefix(length)), from: Self.source, now: .at(0))
            #expect(action == .drop(reason: length == 0 ? .notSTUN : .malformed))
        }
    }

    @Test func clientRejectsForeignOrTamperedResponses() throws {
        let client = ICEClientRole(local: Self.browser, remote: Self.server, tieBreaker: 3)
        var agent = ICELiteAgent(local: Self.server, remote: Self.browser)
        let id = TransactionID(high: 9, low: 9)
        guard case .respondAndNominate(let response, _) = agent.handle(
            client.bindingRequest(transactionID: id, useCandidate: true), from: Self.source, now: .at(0)) else {
            Issue.record("no response")
            return
        }
        #expect(client.validateResponse(response, transactionID: TransactionID(high: 9, low: 10))
                == .invalid(.otherTransaction))
        var tampered = response
        tampered[30] ^= 1  // inside the XOR'ed address
        #expect(client.validateResponse(tampered, transactionID: id) == .invalid(.badFingerprint))
        let otherServer = try ICECredentials(ufrag: "srvA", password: "someOtherPassword22chr")
        let wrongKey = ICEClientRole(local: Self.browser, remote: otherServer, tieBreaker: 3)
        #expect(wrongKey.validateResponse(response, transactionID: id) == .invalid(.badIntegrity))
        #expect(client.validateResponse(Array(response.prefix(30)), transactionID: id) == .invalid(.malformed))
        #expect(client.validateResponse([0x80, 0, 0, 0], transactionID: id) == .invalid(.malformed))
        let request = client.bindingRequest(transactionID: id, useCandidate: false)
        #expect(client.validateResponse(request, transactionID: id)
                == .invalid(.notAResponse))
    }
}

/// RFC 5769 §2.1 Sample Request (USERNAME evtj:h6vY, password VOkJxbRl1RmTxUk/WvJxBt).
private let rfcRequest: [UInt8] = [
    0x00, 0x01, 0x00, 0x58, 0x21, 0x12, 0xa4, 0x42, 0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87, 0xdf, 0xae,
    0x80, 0x22, 0x00, 0x10, 0x53, 0x54, 0x55, 0x4e, 0x20, 0x74, 0x65, 0x73, 0x74, 0x20, 0x63, 0x6c, 0x69, 0x65, 0x6e, 0x74,
    0x00, 0x24, 0x00, 0x04, 0x6e, 0x00, 0x01, 0xff,
    0x80, 0x29, 0x00, 0x08, 0x93, 0x2f, 0xf9, 0xb1, 0x51, 0x26, 0x3b, 0x36,
    0x00, 0x06, 0x00, 0x09, 0x65, 0x76, 0x74, 0x6a, 0x3a, 0x68, 0x36, 0x76, 0x59, 0x20, 0x20, 0x20,
    0x00, 0x08, 0x00, 0x14, 0x9a, 0xea, 0xa7, 0x0c, 0xbf, 0xd8, 0xcb, 0x56, 0x78, 0x1e, 0xf2, 0xb5, 0xb2, 0xd3, 0xf2, 0x49,
    0xc1, 0xb5, 0x71, 0xa2,
    0x80, 0x28, 0x00, 0x04, 0xe5, 0x7a, 0x3b, 0xcf,
]
