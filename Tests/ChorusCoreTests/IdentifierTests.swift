import ChorusCore
import Testing

@Suite("Identifier rules (Sinch SDK)")
struct IdentifierTests {
    @Test func roomIDLengthEdges() throws {
        #expect(throws: Never.self) { try RoomID(validating: String(repeating: "a", count: 64)) }
        #expect(throws: Never.self) { try RoomID(validating: "a") }
        #expect(throws: IdentifierError.self) { try RoomID(validating: String(repeating: "a", count: 65)) }
        #expect(throws: IdentifierError.self) { try RoomID(validating: "") }
    }

    @Test func roomIDAcceptsEachAllowedClass() throws {
        for value in ["ABCXYZ", "abcxyz", "0123456789", "-", "_", "=", "Aa0-_="] {
            #expect((try? RoomID(validating: value)) != nil, "\(value)")
        }
    }

    @Test(arguments: [
        "a b", "a/b", "a.b", "a+b", "a%20b", "a?b", "a#b", "a:b", "a@b", "a~b", "a\u{0}b", "a\nb",
        "é", "日本", "a\u{200B}b", "a'b", "a\"b", "a*b", "a,b", "a;b", "a\\b", "🙂",
    ])
    func roomIDRejectsForbiddenCharacters(_ value: String) {
        #expect {
            try RoomID(validating: value)
        } throws: { error in
            (error as? IdentifierError)?.code == "invalidRoomId"
        }
    }

    @Test func roomIDCountsBytesNotCharacters() {
        // 64 characters would pass a character count, but non-ASCII is refused anyway.
        #expect(throws: IdentifierError.self) { try RoomID(validating: String(repeating: "é", count: 32)) }
    }

    @Test func userIDLengthEdges() throws {
        #expect(throws: Never.self) { try UserID(validating: String(repeating: "u", count: 255)) }
        #expect {
            try UserID(validating: String(repeating: "u", count: 256))
        } throws: { error in
            (error as? IdentifierError)?.code == "invalidUserId"
        }
        #expect(throws: IdentifierError.self) { try UserID(validating: "") }
    }

    @Test(arguments: ["a b", "a/b", "a.b", "a+b", "a@b", "ü", "a\tb"])
    func userIDRejectsForbiddenCharacters(_ value: String) {
        #expect(throws: IdentifierError.self) { try UserID(validating: value) }
    }

    @Test func applicationKeyIsALowercaseGUID() throws {
        #expect(throws: Never.self) { try ApplicationKey(validating: "3414cb6d-9f4a-406a-a52e-b2ef14380668") }
        for bad in [
            "3414CB6D-9F4A-406A-A52E-B2EF14380668", "3414cb6d9f4a406aa52eb2ef14380668",
            "3414cb6d-9f4a-406a-a52e-b2ef1438066", "3414cb6d-9f4a-406a-a52e-b2ef143806680",
            "3414cb6d-9f4a-406a-a52e_b2ef14380668", "g414cb6d-9f4a-406a-a52e-b2ef14380668", "",
        ] {
            #expect(throws: IdentifierError.self, "\(bad)") { try ApplicationKey(validating: bad) }
        }
    }

    @Test func generatedKeysAreVersion4GUIDs() throws {
        let key = ApplicationKey(randomBytes: Array(0..<16))
        #expect(key.rawValue == "00010203-0405-4607-8809-0a0b0c0d0e0f")
        #expect(throws: Never.self) { try ApplicationKey(validating: key.rawValue) }
        #expect(throws: Never.self) { try CallID(validating: key.rawValue) }
    }
}
