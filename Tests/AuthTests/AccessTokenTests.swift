import Auth
import ChorusCore
import Foundation
import Testing

@Suite("HS256 access tokens")
struct AccessTokenTests {
    let signer = AccessTokenSigner(key: Array(repeating: 7, count: 32))
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func claims(lifetime: TimeInterval = 3600) -> AccessTokenClaims {
        AccessTokenClaims(userId: try! UserID(validating: "alice"),
                          applicationKey: try! ApplicationKey(validating: "3414cb6d-9f4a-406a-a52e-b2ef14380668"),
                          issuedAt: now, lifetime: lifetime, tokenId: "t1")
    }

    /// RFC 7515 Appendix A.1: the HS256 JWS example, signing input and key from the RFC.
    @Test func rfc7515AppendixA1Signature() {
        let header: [UInt8] = [123, 34, 116, 121, 112, 34, 58, 34, 74, 87, 84, 34, 44, 13, 10, 32, 34, 97, 108, 103,
                               34, 58, 34, 72, 83, 50, 53, 54, 34, 125]
        let payload = #"{"iss":"joe","# + "\r\n" + #" "exp":1300819380,"# + "\r\n" + #" "http://example.com/is_root":true}"#
        let input = Base64.urlEncode(header) + "." + Base64.urlEncode(Array(payload.utf8))
        #expect(input.hasPrefix("eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"))
        let key = Base64.urlDecode(
            "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow")!
        let mac = Digest.hmacSHA256(key: key, data: Array(input.utf8))
        #expect(Base64.urlEncode(mac) == "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
    }

    @Test func signAndVerifyRoundTrip() throws {
        let token = signer.sign(claims())
        let verified = try signer.verify(token, now: now.addingTimeInterval(60))
        #expect(verified == claims())
    }

    @Test func expiredTokensAreRefused() {
        let token = signer.sign(claims(lifetime: 3600))
        #expect(throws: AccessTokenSigner.Failure.expired) {
            try signer.verify(token, now: now.addingTimeInterval(3600))
        }
    }

    @Test func tamperedTokensAreRefused() {
        let token = signer.sign(claims())
        let parts = token.split(separator: ".").map(String.init)
        // Same header and signature, payload naming another user.
        var forged = claims()
        forged.sub = "mallory"
        let forgedPayload = Base64.urlEncode(try! JSONEncoder().encode(forged))
        #expect(throws: AccessTokenSigner.Failure.badSignature) {
            try signer.verify(parts[0] + "." + forgedPayload + "." + parts[2], now: now)
        }
        // Another key.
        let other = AccessTokenSigner(key: Array(repeating: 8, count: 32))
        #expect(throws: AccessTokenSigner.Failure.badSignature) { try other.verify(token, now: now) }
        // alg "none" with an empty signature.
        let none = Base64.urlEncode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8))
        #expect(throws: AccessTokenSigner.Failure.malformed) { try signer.verify(none + "." + parts[1] + ".", now: now) }
    }

    @Test(arguments: ["", ".", "..", "a.b.c", "a.b", "a.b.c.d", "eyJ.eyJ.!!", String(repeating: "a", count: 5000)])
    func malformedTokensAreRefused(_ token: String) {
        #expect(throws: AccessTokenSigner.Failure.self) { try signer.verify(token, now: now) }
    }
}
