import Auth
import Testing

@Suite("Digests and HMAC (golden vectors)")
struct DigestTests {
    func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test func sha1AndMD5KnownAnswers() {
        // FIPS 180 / RFC 1321 test strings.
        #expect(hex(Digest.sha1(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(hex(Digest.md5(Array("abc".utf8))) == "900150983cd24fb0d6963f7d28e17f72")
        #expect(hex(Digest.sha256(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func hmacSHA256RFC4231Case2() {
        let mac = Digest.hmacSHA256(key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))
        #expect(hex(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func hmacWithEmptyKeyDoesNotCrash() {
        #expect(Digest.hmacSHA256(key: [], data: Array("x".utf8)).count == 32)
    }

    @Test func constantTimeEqualsComparesWholeValues() {
        #expect(constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!constantTimeEquals([1, 2, 3], [1, 2]))
        #expect(constantTimeEquals([UInt8](), [UInt8]()))
    }

    @Test func base64URLRoundTripAndRejects() {
        let bytes: [UInt8] = [0xfb, 0xff, 0xfe, 0x01]
        #expect(Base64.urlEncode(bytes) == "-__-AQ")
        #expect(Base64.urlDecode("-__-AQ") == bytes)
        #expect(Base64.urlDecode("a+b/") == nil)
        #expect(Base64.urlDecode("a") == nil)
        #expect(Base64.urlDecode("a=") == nil)
    }
}
