import ChorusCore
import SDP
import Testing

/// The answer's host candidates (RFC 8839 §5.1, RFC 6544 §4.5): the UDP one, the passive TCP
/// one when ICE-TCP is on, for each announced address, with priorities that prefer UDP and the
/// first address, and lines that our own parser and the RFC grammar read back.
@Suite("Answer candidates")
struct AnswerCandidateTests {
    func candidateLines(_ local: LocalParameters, _ analysis: OfferAnalysis) throws -> [String] {
        let text = try AnswerBuilder(analysis: analysis, local: local).buildText()
        let firstSection = text.components(separatedBy: "m=")[1]
        return firstSection.split(whereSeparator: \.isNewline).map(String.init).filter { $0.hasPrefix("a=candidate:") }
    }

    @Test func udpOnlyByDefault() throws {
        let analysis = try Fixture.chromeAudioOnly.analysis()
        let lines = try candidateLines(try localParameters(for: analysis), analysis)
        #expect(lines == ["a=candidate:1 1 udp 2130706431 203.0.113.7 40000 typ host"])
    }

    @Test func passiveTCPFollowsUDPForEveryAddress() throws {
        let analysis = try Fixture.chromeAudioOnly.analysis()
        var local = try localParameters(for: analysis)
        local.candidateTCPPort = 40_001
        local.additionalCandidateAddresses = ["2001:db8::7"]
        let lines = try candidateLines(local, analysis)
        #expect(lines == [
            "a=candidate:1 1 udp 2130706431 203.0.113.7 40000 typ host",
            "a=candidate:2 1 tcp 2124414975 203.0.113.7 40001 typ host tcptype passive",
            "a=candidate:3 1 udp 2130706175 2001:db8::7 40000 typ host",
            "a=candidate:4 1 tcp 2124414719 2001:db8::7 40001 typ host tcptype passive",
        ])
        let parsed = lines.compactMap { Candidate(parsing: String($0.dropFirst("a=candidate:".count))) }
        #expect(parsed.count == 4)
        #expect(parsed.map(\.tcpType) == [nil, "passive", nil, "passive"])
        // RFC 8445 §5.1.2.1 with RFC 6544 §4.2: type 126, passive direction 4, component 1.
        #expect(AnswerBuilder.tcpCandidatePriority == (126 << 24) | ((4 << 13 | 8_191) << 8) | 255)
        #expect(parsed[0].priority > parsed[2].priority && parsed[2].priority > parsed[1].priority)
    }

    @Test func badAddressesAndPortsAreRefusedNotWritten() throws {
        let analysis = try Fixture.chromeAudioOnly.analysis()
        var local = try localParameters(for: analysis)
        local.candidateTCPPort = 0
        #expect(throws: AnswerError.invalidLocalParameter("candidateTCPPort")) {
            try AnswerBuilder(analysis: analysis, local: local).buildText()
        }
        local.candidateTCPPort = 9
        local.additionalCandidateAddresses = ["203.0.113.9\r\na=injected"]
        #expect(throws: AnswerError.invalidLocalParameter("additionalCandidateAddresses")) {
            try AnswerBuilder(analysis: analysis, local: local).buildText()
        }
    }
}
