import ChorusCore
import STUN
import Testing

/// RFC 5769's sample messages: parsing, MESSAGE-INTEGRITY with the short-term password,
/// FINGERPRINT, XOR-MAPPED-ADDRESS, and rebuilding each one byte for byte.
@Suite("RFC 5769 test vectors")
struct RFC5769Tests {
    let key = MessageIntegrity.shortTermKey(password: RFC5769.password)

    @Test func sampleRequest() throws {
        let message = try STUNMessage(parsing: RFC5769.request)
        #expect(message.type == .bindingRequest)
        #expect(message.transactionID == RFC5769.transactionID)
        #expect(message.software == "STUN test client")
        #expect(message.usernameString == "evtj:h6vY")
        #expect(message.priority == 0x6E00_01FF)
        #expect(message.iceControlled == 0x932F_F9B1_5126_3B36)
        #expect(message.iceControlling == nil)
        #expect(!message.useCandidate)
        #expect(message.unknownComprehensionRequiredAttributes.isEmpty)
        #expect(message.hasValidMessageIntegrity(key: key))
        #expect(message.fingerprintIsValid == true)
    }

    @Test func sampleIPv4Response() throws {
        let message = try STUNMessage(parsing: RFC5769.ipv4Response)
        #expect(message.type == .bindingSuccessResponse)
        #expect(message.software == "test vector")
        #expect(message.xorMappedAddress == RFC5769.ipv4Address)
        #expect(message.hasValidMessageIntegrity(key: key))
        #expect(message.fingerprintIsValid == true)
    }

    @Test func sampleIPv6Response() throws {
        let message = try STUNMessage(parsing: RFC5769.ipv6Response)
        #expect(message.type == .bindingSuccessResponse)
        #expect(message.xorMappedAddress == RFC5769.ipv6Address)
        #expect(message.xorMappedAddress?.description == "[2001:db8:1234:5678:11:2233:4455:6677]:32853")
        #expect(message.hasValidMessageIntegrity(key: key))
        #expect(message.fingerprintIsValid == true)
    }

    @Test(arguments: [0, 1, 2])
    func wrongPasswordFailsIntegrity(vector: Int) throws {
        let message = try STUNMessage(parsing: RFC5769.all[vector])
        let oneCharacterOff = MessageIntegrity.shortTermKey(password: "VOkJxbRl1RmTxUk/WvJxBu")
        #expect(!message.hasValidMessageIntegrity(key: oneCharacterOff))
        #expect(!message.hasValidMessageIntegrity(key: []))
    }

    @Test(arguments: [0, 1, 2])
    func anyFlippedBitBreaksFingerprintOrIntegrity(vector: Int) throws {
        let original = RFC5769.all[vector]
        for offset in STUNMessage.headerLength..<original.count {
            var corrupted = original
            corrupted[offset] ^= 0x01
            guard let message = try? STUNMessage(parsing: corrupted) else { continue }
            #expect(message.fingerprintIsValid != true || !message.hasValidMessageIntegrity(key: key),
                    "bit flip at \(offset) went unnoticed")
        }
    }

    /// The builder, with the RFC's 0x20 padding, reproduces each vector exactly: this checks our
    /// MESSAGE-INTEGRITY and FINGERPRINT computation, not just verification.
    @Test func builderReproducesSampleRequest() {
        var builder = STUNMessageBuilder(type: .bindingRequest, transactionID: RFC5769.transactionID)
        builder.appendSoftware("STUN test client")
        builder.appendPriority(0x6E00_01FF)
        builder.appendICEControlled(tieBreaker: 0x932F_F9B1_5126_3B36)
        builder.appendAttribute(.username, value: Array("evtj:h6vY".utf8), padding: 0x20)
        builder.appendMessageIntegrity(key: key)
        builder.appendFingerprint()
        #expect(builder.finish() == RFC5769.request)
    }

    @Test func builderReproducesSampleResponses() {
        let vectors = [(RFC5769.ipv4Address, RFC5769.ipv4Response), (RFC5769.ipv6Address, RFC5769.ipv6Response)]
        for (address, expected) in vectors {
            var builder = STUNMessageBuilder(type: .bindingSuccessResponse, transactionID: RFC5769.transactionID)
            builder.appendAttribute(.software, value: Array("test vector".utf8), padding: 0x20)
            builder.appendXORMappedAddress(address)
            builder.appendMessageIntegrity(key: key)
            builder.appendFingerprint()
            #expect(builder.finish() == expected)
        }
    }

    @Test func peekFindsTheRequestUfrag() {
        #expect(STUNMessage.peekUsername(RFC5769.request).map(Array.init) == Array("evtj:h6vY".utf8))
        #expect(STUNMessage.peekLocalUfragString(RFC5769.request) == "evtj")
        #expect(STUNMessage.peekUsername(RFC5769.ipv4Response) == nil)
    }
}
