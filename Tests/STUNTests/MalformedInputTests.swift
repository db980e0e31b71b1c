import ChorusCore
import STUN
import Testing

/// Peer input must never trap: every truncation, lying length fields, attribute values of the
/// wrong size, and seeded random bytes are refused (or parsed safely), and every accessor and
/// peek helper survives whatever parses.
@Suite("Malformed STUN input")
struct MalformedInputTests {
    /// A header with a correct length field for `attributes` (raw TLV bytes).
    static func message(type: UInt16 = 0x0001, attributes: [UInt8]) -> [UInt8] {
        let length = attributes.count
        return [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(length >> 8), UInt8(length & 0xFF),
                0x21, 0x12, 0xA4, 0x42] + Array(1...12) + attributes
    }

    /// Touches everything a caller might read, so that a trap anywhere would show.
    static func exercise(_ bytes: [UInt8]) {
        _ = STUNMessage.hasSTUNHeader(bytes)
        _ = STUNMessage.peekUsername(bytes)
        _ = STUNMessage.peekLocalUfragString(bytes)
        bytes.withUnsafeBytes { _ = STUNMessage.peekLocalUfrag(in: $0) }
        guard let message = try? STUNMessage(parsing: bytes) else { return }
        _ = (message.username, message.usernameString, message.software, message.priority)
        _ = (message.useCandidate, message.iceControlling, message.iceControlled)
        _ = (message.xorMappedAddress, message.errorCode, message.unknownAttributes)
        _ = message.hasValidMessageIntegrity(key: Array("VOkJxbRl1RmTxUk/WvJxBt".utf8))
        _ = message.fingerprintIsValid
        _ = Array(message.attributes)
    }

    static let fullMessage: [UInt8] = {
        var builder = STUNMessageBuilder(type: .bindingRequest, transactionID: TransactionID(high: 1, low: 2))
        builder.appendUsername("abcd:efgh")
        builder.appendPriority(7)
        builder.appendICEControlling(tieBreaker: 9)
        builder.appendUseCandidate()
        builder.appendXORMappedAddress(TransportAddress(bytes: Array(repeating: 0xFE, count: 16), port: 9)!)
        builder.appendErrorCode(.badRequest)
        builder.appendUnknownAttributes([.realm])
        builder.appendSoftware("x")
        builder.appendMessageIntegrity(key: [1, 2, 3])
        builder.appendFingerprint()
        return builder.finish()
    }()

    static let validMessages: [[UInt8]] = RFC5769.all + [fullMessage]

    @Test(arguments: 0..<4)
    func everyTruncationIsRefused(vector: Int) {
        let valid = Self.validMessages[vector]
        for length in 0..<valid.count {
            let truncated = Array(valid.prefix(length))
            #expect(throws: STUNParseError.self) { try STUNMessage(parsing: truncated) }
            #expect(!STUNMessage.hasSTUNHeader(truncated))
            #expect(STUNMessage.peekUsername(truncated) == nil)
            Self.exercise(truncated)
            // Truncated but with the length field patched to match: attributes are cut instead.
            if length >= 20 {
                var patched = truncated
                patched[2] = UInt8((length - 20) >> 8)
                patched[3] = UInt8((length - 20) & 0xFF)
                Self.exercise(patched)
            }
        }
    }

    @Test(arguments: 0..<4)
    func everyLyingMessageLengthIsRefused(vector: Int) {
        let valid = Self.validMessages[vector]
        for length in 0...0xFFFF where length != valid.count - 20 {
            var lying = valid
            lying[2] = UInt8(length >> 8)
            lying[3] = UInt8(length & 0xFF)
            #expect(throws: STUNParseError.self) { try STUNMessage(parsing: lying) }
            #expect(STUNMessage.peekUsername(lying) == nil)
        }
        #expect(throws: STUNParseError.lengthMismatch) { try STUNMessage(parsing: valid + [0, 0, 0, 0]) }
    }

    @Test(arguments: 0..<4)
    func lyingAttributeLengthsNeverTrap(vector: Int) {
        let valid = Self.validMessages[vector]
        let lengths = Array(0...64) + [255, 256, 511, 512, 513, 514, 764, 0x7FFF, 0x8000, 0xFFFC, 0xFFFD, 0xFFFF]
        var offset = 20
        while offset + 4 <= valid.count {
            for length in lengths {
                var lying = valid
                lying[offset + 2] = UInt8(length >> 8)
                lying[offset + 3] = UInt8(length & 0xFF)
                Self.exercise(lying)
            }
            let length = Int(valid[offset + 2]) << 8 | Int(valid[offset + 3])
            offset += 4 + (length + 3) / 4 * 4
        }
    }

    @Test func seededRandomBytesNeverTrap() {
        var generator = SplitMix64(seed: 0x5354_554E)
        for _ in 0..<20_000 {
            let count = Int.random(in: 0...160, using: &generator)
            let bytes = (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            Self.exercise(bytes)
            // The same bytes behind a valid header, so the attribute walker sees them.
            let body = Array(bytes.prefix(bytes.count / 4 * 4))
            Self.exercise(Self.message(attributes: body))
        }
    }

    @Test func seededMutationsOfValidMessagesNeverTrap() {
        var generator = SplitMix64(seed: 42)
        for _ in 0..<20_000 {
            var bytes = Self.validMessages[Int.random(in: 0..<4, using: &generator)]
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let index = Int.random(in: 20..<bytes.count, using: &generator)
                bytes[index] = UInt8.random(in: .min ... .max, using: &generator)
            }
            Self.exercise(bytes)
        }
    }

    /// One hand-made malformed message and the error the parser must throw for it.
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let bytes: [UInt8]
        let error: STUNParseError
        var testDescription: String { name }
    }

    /// A raw TLV: `type`, a length field (the value's size unless told to lie), the value as
    /// given (no padding added).
    static func tlv(_ type: UInt16, _ value: [UInt8], length: Int? = nil) -> [UInt8] {
        let length = length ?? value.count
        return [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(length >> 8), UInt8(length & 0xFF)] + value
    }

    static let empty = message(attributes: [])
    static func zeros(_ count: Int) -> [UInt8] { [UInt8](repeating: 0, count: count) }

    static let cases: [Case] = [
        Case(name: "empty", bytes: [], error: .tooShort),
        Case(name: "19 bytes", bytes: Array(empty.prefix(19)), error: .tooShort),
        Case(name: "top bits set (RTP-like)", bytes: [0x80] + empty.dropFirst(), error: .notSTUN),
        Case(name: "wrong magic cookie", bytes: Array(empty.prefix(7)) + [0x43] + Array(1...12), error: .notSTUN),
        Case(name: "length not a multiple of 4",
             bytes: [0, 1, 0, 2, 0x21, 0x12, 0xA4, 0x42] + Array(1...12) + [0, 0], error: .lengthMismatch),
        Case(name: "value runs past the end", bytes: message(attributes: tlv(0x0024, [1, 2, 3, 4], length: 8)),
             error: .truncatedAttribute),
        Case(name: "value length 0xFFFF", bytes: message(attributes: tlv(0x0006, [], length: 0xFFFF)),
             error: .truncatedAttribute),
        Case(name: "padding missing", bytes: message(attributes: tlv(0x0006, [1, 2, 3, 4], length: 5)),
             error: .truncatedAttribute),
        Case(name: "MESSAGE-INTEGRITY of 16 bytes", bytes: message(attributes: tlv(0x0008, zeros(16))),
             error: .invalidAttribute(.messageIntegrity)),
        Case(name: "FINGERPRINT of 8 bytes", bytes: message(attributes: tlv(0x8028, zeros(8))),
             error: .invalidAttribute(.fingerprint)),
        Case(name: "attribute after FINGERPRINT", bytes: message(attributes: tlv(0x8028, zeros(4)) + tlv(0x0025, [])),
             error: .attributeAfterFingerprint),
        Case(name: "XOR-MAPPED-ADDRESS IPv4 family, IPv6 size",
             bytes: message(attributes: tlv(0x0020, [0, 1] + zeros(18))),
             error: .invalidAttribute(.xorMappedAddress)),
        Case(name: "XOR-MAPPED-ADDRESS family 3", bytes: message(attributes: tlv(0x0020, [0, 3] + zeros(6))),
             error: .invalidAttribute(.xorMappedAddress)),
        Case(name: "XOR-MAPPED-ADDRESS of 2 bytes", bytes: message(attributes: tlv(0x0020, [0, 1, 0, 0], length: 2)),
             error: .invalidAttribute(.xorMappedAddress)),
        Case(name: "ERROR-CODE class 7", bytes: message(attributes: tlv(0x0009, [0, 0, 7, 0])),
             error: .invalidAttribute(.errorCode)),
        Case(name: "ERROR-CODE number 100", bytes: message(attributes: tlv(0x0009, [0, 0, 4, 100])),
             error: .invalidAttribute(.errorCode)),
        Case(name: "ERROR-CODE of 3 bytes", bytes: message(attributes: tlv(0x0009, [0, 0, 4, 0], length: 3)),
             error: .invalidAttribute(.errorCode)),
        Case(name: "PRIORITY of 3 bytes", bytes: message(attributes: tlv(0x0024, [0, 0, 1, 0], length: 3)),
             error: .invalidAttribute(.priority)),
        Case(name: "USE-CANDIDATE with a value", bytes: message(attributes: tlv(0x0025, zeros(4))),
             error: .invalidAttribute(.useCandidate)),
        Case(name: "ICE-CONTROLLING of 4 bytes", bytes: message(attributes: tlv(0x802A, zeros(4))),
             error: .invalidAttribute(.iceControlling)),
        Case(name: "UNKNOWN-ATTRIBUTES of odd length", bytes: message(attributes: tlv(0x000A, [0, 1, 0, 0], length: 3)),
             error: .invalidAttribute(.unknownAttributes)),
        Case(name: "USERNAME of 516 bytes", bytes: message(attributes: tlv(0x0006, zeros(516))),
             error: .invalidAttribute(.username)),
    ]

    @Test(arguments: cases)
    func malformedInputThrowsTheRightError(_ testCase: Case) {
        #expect(throws: testCase.error) { try STUNMessage(parsing: testCase.bytes) }
        _ = testCase.bytes.withUnsafeBytes { buffer in
            #expect(throws: testCase.error) { try STUNMessage(parsing: buffer) }
        }
        Self.exercise(testCase.bytes)
    }

    @Test func manyDistinctUnknownTypesAreBoundedAndFast() throws {
        // ~16K distinct comprehension-required types in one datagram: parsed in linear time.
        var attributes: [UInt8] = []
        for type in 0x4000..<0x7FFF where attributes.count < 65_000 {
            attributes += [UInt8(type >> 8), UInt8(type & 0xFF), 0, 0]
        }
        let message = try STUNMessage(parsing: Self.message(attributes: attributes))
        #expect(message.unknownComprehensionRequiredAttributes.count == STUNMessage.maximumReportedUnknownAttributes)
        #expect(message.unknownComprehensionRequiredAttributes.first == STUNAttributeType(rawValue: 0x4000))
    }

    @Test func peekStopsAtIntegrityAndNeedsAColon() {
        let late = Self.message(attributes: Self.tlv(0x0008, Self.zeros(20)) + Self.tlv(0x0006, Array("ab:c".utf8)))
        #expect(STUNMessage.peekUsername(late) == nil)
        let noColon = Self.message(attributes: Self.tlv(0x0006, Array("abcd".utf8)))
        #expect(STUNMessage.peekUsername(noColon).map(Array.init) == Array("abcd".utf8))
        #expect(STUNMessage.peekLocalUfrag(noColon) == nil)
        let emptyUfrag = Self.message(attributes: Self.tlv(0x0006, Array(":abc".utf8)))
        #expect(STUNMessage.peekLocalUfrag(emptyUfrag) == nil)
        #expect(STUNMessage.looksLikeSTUN(firstByte: 3))
        #expect(!STUNMessage.looksLikeSTUN(firstByte: 4))
        #expect(!STUNMessage.looksLikeSTUN(firstByte: 0x80))
    }
}
