import ChorusCore
import Foundation
import Testing
@testable import SDP

/// Hostile and broken input: every case must throw (or, for a truncation that still forms a
/// complete offer, be accepted consistently) and none may trap.
@Suite struct MalformedInputTests {
    static let head = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n"

    /// (text, line the parser must name)
    static let malformedTable: [(String, Int)] = [
        ("", 1),
        ("\r\n\r\n", 2),
        ("v=1\r\n", 1),
        ("o=- 1 1 IN IP4 0.0.0.0\r\nv=0\r\n", 1),
        (" v=0\r\n", 1),
        ("v=0\r\nnot a line\r\n", 2),
        ("v=0\r\n=x\r\n", 2),
        ("v=0\r\no=- 1 1 IN IP4\r\ns=-\r\nt=0 0\r\n", 2),
        ("v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\nt=0 0\r\n", 3),
        ("v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\n", 3),
        ("v=0\r\ns=-\r\nt=0 0\r\n", 3),
        (head + "v=0\r\n", 5),
        (head + "o=- 2 2 IN IP4 0.0.0.0\r\n", 5),
        (head + "t=now 0\r\n", 5),
        (head + "c=IN IP4\r\n", 5),
        (head + "m=audio 9 UDP/TLS/RTP/SAVPF\r\n", 5),
        (head + "m=audio 65536 UDP/TLS/RTP/SAVPF 111\r\n", 5),
        (head + "m=audio -1 UDP/TLS/RTP/SAVPF 111\r\n", 5),
        (head + "m=audio 9/x UDP/TLS/RTP/SAVPF 111\r\n", 5),
        (head + "m=audio 9 UDP/TLS/RTP/SAVPF 128\r\n", 5),
        (head + "m=audio 9 UDP/TLS/RTP/SAVPF opus\r\n", 5),
        (head + "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\ns=late\r\n", 6),
        (head + "a=\r\n", 5),
        (head + "a=bad name\r\n", 5),
        (head + "a=rtpmap:abc opus/48000\r\n", 5),
        (head + "a=rtpmap:111 opus/0/2\r\n", 5),
        (head + "a=fmtp: 111 x=1\r\n", 5),
        (head + "a=rtcp-fb:200 nack\r\n", 5),
        (head + "a=extmap:16x urn:x\r\n", 5),
        (head + "a=fingerprint:sha-256 ZZ:00\r\n", 5),
        (head + "a=fingerprint:sha-256\r\n", 5),
        (head + "a=candidate:1 1 udp 1 192.0.2.1 9 host\r\n", 5),
        (head + "a=ssrc:abc cname:x\r\n", 5),
        (head + "a=ssrc-group:FID 1 x\r\n", 5),
        (head + "a=group:\r\n", 5),
        (head + "a=mid:\r\n", 5),
        (head + "a=msid:a b c\r\n", 5),
        (head + "a=rid:h both\r\n", 5),
        (head + "a=simulcast:send\r\n", 5),
        (head + "a=setup:maybe\r\n", 5),
        (head + "a=ice-ufrag:has space\r\n", 5),
        (head + "a=x\u{0}y\r\n", 5),
        (head + "a=x\ry\r\n", 5),
    ]

    @Test(arguments: malformedTable.indices)
    func malformedLinesNameTheirLine(_ index: Int) {
        let (text, line) = Self.malformedTable[index]
        do {
            let parsed = try SessionDescription(parsing: text)
            Issue.record("parsed \(text.debugDescription) as \(parsed)")
        } catch {
            guard case .malformed(let reported, _) = error else {
                Issue.record("expected malformed, got \(error)")
                return
            }
            #expect(reported == line, "\(text.debugDescription): \(error.message)")
            #expect(error.code == "malformed")
        }
    }

    @Test func oversizedInputIsRefusedBeforeParsing() throws {
        let big = String(repeating: "a=x-padding:0123456789abcdef\r\n", count: 1 << 20 / 30 + 1)
        let text = Self.head + big
        #expect(text.utf8.count > 1 << 20)
        #expect(throws: SDPOfferError.tooLarge(bytes: text.utf8.count, limit: SessionDescription.defaultMaximumBytes)) {
            try SessionDescription(parsing: text)
        }
        #expect(throws: SDPOfferError.self) { try SessionDescription(parsing: Array(repeating: 0x61, count: 1 << 20)) }
        let limit = try Fixture.chromeAV.text.utf8.count - 1
        #expect(throws: SDPOfferError.tooLarge(bytes: limit + 1, limit: limit)) {
            try SessionDescription(parsing: try Fixture.chromeAV.text, maximumBytes: limit)
        }
    }

    /// Cut every fixture after lines and inside values (about 300 cuts per fixture, spread
    /// evenly, to keep the debug-build test fast). A cut before the last m= line loses a section
    /// the BUNDLE group names (or the audio section), so it must throw; a later cut may still be
    /// a complete offer (the rest is optional attributes), and then it must describe the same
    /// sections and be answerable.
    @Test(arguments: Fixture.allCases)
    func truncationsThrowOrStayConsistent(_ fixture: Fixture) throws {
        let bytes = Array(try fixture.text.utf8)
        let full = try fixture.analysis()
        let lastMediaLine = try #require(Self.offsets(of: Array("\nm=".utf8), in: bytes).last)
        let lineEnds = bytes.indices.filter { bytes[$0] == 0x0A }
        let lineStep = max(1, lineEnds.count / 150)
        var cuts = Set(stride(from: 0, to: bytes.count, by: max(1, bytes.count / 100)))
        for (number, index) in lineEnds.enumerated() where number % lineStep == 0 {
            cuts.formUnion([max(index - 3, 0), index + 1])
        }
        var thrown = 0
        for cut in cuts.sorted() where cut < bytes.count {
            let prefix = Array(bytes[..<cut])
            do {
                let analysis = try OfferAnalysis(offer: SessionDescription(parsing: prefix), videoSlots: 9)
                #expect(cut > lastMediaLine, "cut at \(cut) before the last m= line was accepted")
                #expect(analysis.bundleMids == full.bundleMids)
                #expect(analysis.audio.opusPayloadType == full.audio.opusPayloadType)
                _ = try AnswerBuilder(analysis: analysis, local: localParameters(for: analysis)).build()
            } catch is SDPOfferError {
                thrown += 1
            }
        }
        #expect(thrown >= cuts.count { $0 <= lastMediaLine })
    }

    @Test func randomBytesAlwaysThrow() {
        var random = SplitMix64(seed: 0xC0FFEE)
        for round in 0..<400 {
            let count = Int.random(in: 0...4096, using: &random)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            // Half the inputs start like SDP so the parser gets past line 1.
            if round.isMultiple(of: 2) { bytes = Array("v=0\r\n".utf8) + bytes }
            #expect(throws: SDPOfferError.self) {
                try OfferAnalysis(offer: SessionDescription(parsing: bytes), videoSlots: 9)
            }
        }
    }

    /// Random byte edits of real offers: whatever parses is analysed, answered and re-parsed.
    @Test(arguments: Fixture.allCases)
    func mutatedOffersNeverTrap(_ fixture: Fixture) throws {
        var random = SplitMix64(seed: UInt64(fixture.rawValue.utf8.count))
        let original = Array(try fixture.text.utf8)
        let alphabet = Array(" :=/;\r\n0123456789abcdefVP8opus-".utf8) + [0x00, 0xFF, 0xC3]
        var accepted = 0
        for _ in 0..<300 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                let position = Int.random(in: 0..<bytes.count, using: &random)
                let byte = alphabet.randomElement(using: &random) ?? 0
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[position] = byte
                case 1: bytes.insert(byte, at: position)
                default: bytes.remove(at: position)
                }
            }
            guard let offer = try? SessionDescription(parsing: bytes),
                  let analysis = try? OfferAnalysis(offer: offer, videoSlots: 9)
            else { continue }
            accepted += 1
            let answer = try AnswerBuilder(analysis: analysis, local: localParameters(for: analysis)).build()
            #expect(try SessionDescription(parsing: answer.text) == answer)
        }
        #expect(accepted > 0)
    }

    /// A hostile but in-limit offer: thousands of payload types and attribute lines on one m=
    /// line must be analysed quickly (the payload-type index keeps it linear).
    @Test func manyAttributesStayLinear() throws {
        var text = Self.head + "a=group:BUNDLE 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF"
        text += String(repeating: " 96", count: 6000) + " 111\r\n"
        text += "a=mid:0\r\na=rtcp-mux\r\na=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuv\r\n"
        text += "a=fingerprint:sha-256 " + Array(repeating: "00", count: 32).joined(separator: ":") + "\r\n"
        text += String(repeating: "a=rtcp-fb:* nack\r\n", count: 3000)
        text += String(repeating: "a=rtpmap:96 VP8/90000\r\n", count: 3000) + "a=rtpmap:111 opus/48000/2\r\n"
        #expect(text.utf8.count < SessionDescription.defaultMaximumBytes)
        let clock = ContinuousClock()
        let elapsed = try clock.measure {
            let analysis = try OfferAnalysis(offer: SessionDescription(parsing: text), videoSlots: 0)
            #expect(analysis.audio.opusPayloadType == pt(111))
            #expect(analysis.audio.feedback.count == 3000)
        }
        #expect(elapsed < .seconds(5))
    }

    static func offsets(of needle: [UInt8], in haystack: [UInt8]) -> [Int] {
        guard haystack.count >= needle.count else { return [] }
        return (0...(haystack.count - needle.count)).filter { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
