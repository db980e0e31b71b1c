import Auth
import ChorusCore
import Foundation
import Testing

@Suite("Registration and request signatures")
struct SignatureTests {
    let key = try! ApplicationKey(validating: "3414cb6d-9f4a-406a-a52e-b2ef14380668")
    let secret = "4/hSWjjY6CVZ/x3aJQFJVg=="
    let alice = try! UserID(validating: "alice")

    // Expected values computed independently with Python's hashlib/hmac:
    // base64(sha1("alice" + key + "42" + secret)).
    @Test func registrationSignatureKnownAnswer() throws {
        let sequence = try RegistrationSequence(validating: "42")
        #expect(RegistrationSignature.sign(userId: alice, applicationKey: key, sequence: sequence,
                                           applicationSecret: secret) == "MmwqsXMB9NhTKxG1XKx15q/GZBc=")
        #expect(RegistrationSignature.verify("MmwqsXMB9NhTKxG1XKx15q/GZBc=", userId: alice, applicationKey: key,
                                             sequence: sequence, applicationSecret: secret))
        let big = try RegistrationSequence(validating: "18446744073709551616")
        #expect(RegistrationSignature.verify("oE++Ap3RRyePjiGbD9dv85Fyoac=", userId: alice, applicationKey: key,
                                             sequence: big, applicationSecret: secret))
    }

    @Test func registrationSignatureRejectsAnyChange() throws {
        let good = "MmwqsXMB9NhTKxG1XKx15q/GZBc="
        let s42 = try RegistrationSequence(validating: "42")
        let s43 = try RegistrationSequence(validating: "43")
        #expect(!RegistrationSignature.verify(good, userId: alice, applicationKey: key, sequence: s43,
                                              applicationSecret: secret))
        #expect(!RegistrationSignature.verify(good, userId: try UserID(validating: "bob"), applicationKey: key,
                                              sequence: s42, applicationSecret: secret))
        #expect(!RegistrationSignature.verify(good, userId: alice, applicationKey: key, sequence: s42,
                                              applicationSecret: "other"))
        for garbage in ["", "not base64!", "MmwqsXMB9NhTKxG1XKx15q/GZBc", String(repeating: "A", count: 10_000)] {
            #expect(!RegistrationSignature.verify(garbage, userId: alice, applicationKey: key, sequence: s42,
                                                  applicationSecret: secret))
        }
    }

    @Test func sequencesAreCanonicalAndOrderedNumerically() throws {
        for bad in ["", "-1", "+1", "01", "00", "1.0", "1e3", " 1", "١", String(repeating: "9", count: 41)] {
            #expect(throws: IdentifierError.self, "\(bad)") { try RegistrationSequence(validating: bad) }
        }
        let values = ["0", "9", "10", "99", "100", "18446744073709551615", "18446744073709551616"]
        let sequences = try values.map { try RegistrationSequence(validating: $0) }
        for (a, b) in zip(sequences, sequences.dropFirst()) {
            #expect(a < b, "\(a) < \(b)")
            #expect(!(b < a))
        }
        #expect(!(sequences[0] < sequences[0]))
    }

    @Test func signedApplicationRequestKnownAnswer() {
        let request = ApplicationRequestSignature(
            method: "POST", body: Array(#"{"roomId":"demo"}"#.utf8), contentType: "application/json",
            timestamp: "2026-11-22T10:00:00Z", path: "/v1/rooms")
        #expect(request.contentMD5 == "N5iLgeVGIFDldIVOFMFglw==")
        #expect(request.signature(secret: secret) == "C9TIk/ZDcnt6+x9xpsUpFLsPtgMp4IhbYaSMPrDUWtk=")
        let at = ApplicationRequestSignature.parseTimestamp("2026-11-22T10:05:00Z")!
        #expect(request.verify("C9TIk/ZDcnt6+x9xpsUpFLsPtgMp4IhbYaSMPrDUWtk=", secret: secret, now: at) == .valid)
        #expect(request.verify("C9TIk/ZDcnt6+x9xpsUpFLsPtgMp4IhbYaSMPrDUWtk=", secret: "AAAAAAAAAAAAAAAAAAAAAA==",
                               now: at) == .badSignature)
    }

    @Test func emptyBodyHasEmptyContentMD5() {
        let request = ApplicationRequestSignature(
            method: "get", body: [UInt8](), contentType: "", timestamp: "2026-11-22T10:00:00Z",
            path: "/v1/rooms?pageSize=1")
        #expect(request.contentMD5 == "")
        #expect(request.signature(secret: secret) == "rBIy9tJErLPYQBKArTcYPFGnca8mMG4bYsYom0Nsad4=")
    }

    @Test func timestampsOutsideFifteenMinutesAreStale() {
        let request = ApplicationRequestSignature(
            method: "GET", body: [UInt8](), contentType: "", timestamp: "2026-11-22T10:00:00Z", path: "/v1/rooms")
        let signature = request.signature(secret: secret)!
        let base = ApplicationRequestSignature.parseTimestamp("2026-11-22T10:00:00Z")!
        #expect(request.verify(signature, secret: secret, now: base.addingTimeInterval(15 * 60)) == .valid)
        #expect(request.verify(signature, secret: secret, now: base.addingTimeInterval(-15 * 60)) == .valid)
        #expect(request.verify(signature, secret: secret, now: base.addingTimeInterval(15 * 60 + 1)) == .staleTimestamp)
        #expect(request.verify(signature, secret: secret, now: base.addingTimeInterval(-15 * 60 - 1)) == .staleTimestamp)
        var bad = request
        bad.timestamp = "yesterday"
        #expect(bad.verify(signature, secret: secret, now: base) == .badTimestamp)
        #expect(ApplicationRequestSignature.parseTimestamp("2026-11-22T10:00:00.123+01:00") != nil)
    }
}
