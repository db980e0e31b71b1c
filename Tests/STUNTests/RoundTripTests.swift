import ChorusCore
import STUN
import Testing

/// Build → parse → compare, for every attribute Chorus writes.
@Suite("STUN round trips")
struct RoundTripTests {
    @Test func messageTypeBitsInterleave() {
        #expect(STUNMessageType.bindingRequest.rawValue == 0x0001)
        #expect(STUNMessageType.bindingIndication.rawValue == 0x0011)
        #expect(STUNMessageType.bindingSuccessResponse.rawValue == 0x0101)
        #expect(STUNMessageType.bindingErrorResponse.rawValue == 0x0111)
        for method in stride(from: UInt16(0), through: 0x0FFF, by: 1) {
            for messageClass in STUNClass.allCases {
                let type = STUNMessageType(method: STUNMethod(rawValue: method)!, messageClass: messageClass)
                #expect(type.rawValue & 0xC000 == 0)
                #expect(STUNMessageType(rawValue: type.rawValue) == type)
            }
        }
        #expect(STUNMessageType(rawValue: 0x4001) == nil)
        #expect(STUNMethod(rawValue: 0x1000) == nil)
    }

    @Test func everyAttributeRoundTrips() throws {
        let id = TransactionID(high: 0x0102_0304, low: 0x0506_0708_090A_0B0C)
        let key = MessageIntegrity.shortTermKey(password: "a-password-of-22-chars")
        var builder = STUNMessageBuilder(type: .bindingErrorResponse, transactionID: id)
        builder.appendUsername("local:remote")
        builder.appendPriority(0x7EFF_FFFF)
        builder.appendUseCandidate()
        builder.appendICEControlling(tieBreaker: .max)
        builder.appendXORMappedAddress(TransportAddress(ipv4: "203.0.113.7", port: 65535)!)
        builder.appendErrorCode(.roleConflict)
        builder.appendUnknownAttributes([STUNAttributeType(rawValue: 0x7777), .realm, .nonce])
        builder.appendSoftware("Chorus ✓")
        builder.appendMessageIntegrity(key: key)
        builder.appendFingerprint()
        let bytes = builder.finish()

        let message = try STUNMessage(parsing: bytes)
        #expect(message.type == .bindingErrorResponse)
        #expect(message.transactionID == id)
        #expect(message.usernameString == "local:remote")
        #expect(message.priority == 0x7EFF_FFFF)
        #expect(message.useCandidate)
        #expect(message.iceControlling == .max)
        #expect(message.iceControlled == nil)
        #expect(message.xorMappedAddress == TransportAddress(ipv4: "203.0.113.7", port: 65535))
        #expect(message.errorCode == .roleConflict)
        #expect(message.unknownAttributes == [STUNAttributeType(rawValue: 0x7777), .realm, .nonce])
        #expect(message.software == "Chorus ✓")
        #expect(message.hasValidMessageIntegrity(key: key))
        #expect(message.fingerprintIsValid == true)
        #expect(bytes.count % 4 == 0)
        #expect(message.attributes.map(\.type).last == .fingerprint)
    }

    @Test func ipv6AddressRoundTripsUnderAnyTransaction() throws {
        var generator = SplitMix64(seed: 6)
        for _ in 0..<200 {
            let id = TransactionID(high: UInt32.random(in: .min ... .max, using: &generator),
                                   low: generator.next())
            let raw = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            let address = TransportAddress(bytes: raw, port: UInt16.random(in: .min ... .max, using: &generator))!
            var builder = STUNMessageBuilder(type: .bindingSuccessResponse, transactionID: id)
            builder.appendXORMappedAddress(address)
            #expect(try STUNMessage(parsing: builder.finish()).xorMappedAddress == address)
        }
    }

    @Test func integrityWithoutFingerprintAndFingerprintWithoutIntegrity() throws {
        let key: [UInt8] = Array("key".utf8)
        var signed = STUNMessageBuilder(type: .bindingRequest, transactionID: .random())
        signed.appendUsername("a:b")
        signed.appendMessageIntegrity(key: key)
        let onlyIntegrity = try STUNMessage(parsing: signed.finish())
        #expect(onlyIntegrity.hasValidMessageIntegrity(key: key))
        #expect(onlyIntegrity.fingerprintIsValid == nil)

        var plain = STUNMessageBuilder(type: .bindingIndication, transactionID: .random())
        plain.appendFingerprint()
        let onlyFingerprint = try STUNMessage(parsing: plain.finish())
        #expect(onlyFingerprint.fingerprintIsValid == true)
        #expect(!onlyFingerprint.hasMessageIntegrity)
        #expect(!onlyFingerprint.hasValidMessageIntegrity(key: key))
    }

    @Test func attributesAfterIntegrityAreIgnoredButFirstOccurrenceWins() throws {
        let key: [UInt8] = Array("key".utf8)
        var builder = STUNMessageBuilder(type: .bindingRequest, transactionID: .random())
        builder.appendPriority(1)
        builder.appendPriority(2)
        builder.appendMessageIntegrity(key: key)
        builder.appendUsername("late:user")
        builder.appendAttribute(STUNAttributeType(rawValue: 0x7001), value: [1])
        let message = try STUNMessage(parsing: builder.finish())
        #expect(message.priority == 1)
        #expect(message.username == nil)
        #expect(message.unknownComprehensionRequiredAttributes.isEmpty)
        #expect(message.attributes.count { $0.type == .priority } == 2)
        #expect(message.firstAttribute(.username).map(Array.init) == Array("late:user".utf8))
    }

    @Test func unknownAttributesAreReportedOnlyWhenComprehensionRequired() throws {
        var builder = STUNMessageBuilder(type: .bindingRequest, transactionID: .random())
        builder.appendAttribute(STUNAttributeType(rawValue: 0xC057), value: [0, 1, 0, 0])  // GOOG-NETWORK-INFO
        builder.appendAttribute(STUNAttributeType(rawValue: 0x0031), value: [9])
        builder.appendAttribute(STUNAttributeType(rawValue: 0x0031), value: [9])
        builder.appendAttribute(.realm, value: Array("x".utf8))
        let message = try STUNMessage(parsing: builder.finish())
        #expect(message.unknownComprehensionRequiredAttributes == [STUNAttributeType(rawValue: 0x0031), .realm])
    }

    @Test func crc32CheckValue() {
        #expect(Fingerprint.crc32(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(Fingerprint.crc32([UInt8]()) == 0)
    }

    @Test func transactionIDBytes() {
        let id = TransactionID(bytes: Array(1...12))
        #expect(id?.bytes == Array(1...12))
        #expect(TransactionID(bytes: Array(1...11)) == nil)
        #expect(TransactionID.random() != TransactionID.random())
    }

    @Test func errorCodeBounds() {
        #expect(ErrorCode(code: 299, reasonPhrase: "") == nil)
        #expect(ErrorCode(code: 700, reasonPhrase: "") == nil)
        #expect(ErrorCode(code: 420, reasonPhrase: String(repeating: "x", count: 764)) == nil)
        #expect(ErrorCode(code: 699, reasonPhrase: "ok")?.code == 699)
    }

    @Test func softwareIsCutAtTheLimit() throws {
        var builder = STUNMessageBuilder(type: .bindingIndication, transactionID: .random())
        builder.appendSoftware(String(repeating: "é", count: 500))  // 1000 bytes of UTF-8
        let software = try STUNMessage(parsing: builder.finish()).software
        #expect(software?.utf8.count == 762)
        #expect(software?.allSatisfy { $0 == "é" } == true)
    }
}
