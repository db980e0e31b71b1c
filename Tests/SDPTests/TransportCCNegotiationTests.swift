import ChorusCore
import SDP
import Testing

/// transport-cc is answered when the offer asks for it and maps the transport-wide sequence
/// number to one ID across its sections; otherwise neither the extension nor the feedback is.
@Suite("SDP: transport-wide congestion control negotiation")
struct TransportCCNegotiationTests {
    func analysis(_ text: String) throws -> OfferAnalysis {
        try OfferAnalysis(offer: SessionDescription(parsing: text), videoSlots: 9)
    }

    @Test(arguments: [(Fixture.chromeAV, UInt16(3)), (.chromeAudioOnly, 3), (.firefoxAV, 7), (.firefoxAudioOnly, 7)])
    func browsersNegotiateIt(_ fixture: Fixture, id: UInt16) throws {
        #expect(try fixture.analysis().transportWideCCExtensionID == id)
    }

    @Test func aiortcDoesNotOfferIt() throws {
        let analysis = try Fixture.aiortcAV.analysis()
        #expect(analysis.transportWideCCExtensionID == nil)
        let answer = try AnswerBuilder(analysis: analysis, local: localParameters(for: analysis)).build()
        #expect(answer.text.contains("transport-cc") == false)
        #expect(answer.text.contains(ExtensionMap.URI.transportWideCC) == false)
    }

    @Test func twoIDsForTheSameExtensionRefuseIt() throws {
        let text = try Fixture.chromeAV.text
        // The second video section maps the sequence number to another ID.
        var sections = text.components(separatedBy: "m=video")
        sections[2] = sections[2].replacingOccurrences(of: "a=extmap:3 http://www.ietf.org/id/draft-holmer",
                                                       with: "a=extmap:13 http://www.ietf.org/id/draft-holmer")
        let analysis = try analysis(sections.joined(separator: "m=video"))
        #expect(analysis.transportWideCCExtensionID == nil)
        let answer = try AnswerBuilder(analysis: analysis, local: localParameters(for: analysis)).build()
        #expect(answer.text.contains("transport-cc") == false)
        #expect(answer.text.contains(ExtensionMap.URI.transportWideCC) == false)
    }

    @Test func theExtensionWithoutTheFeedbackIsNotEnough() throws {
        let text = try Fixture.chromeAV.text.components(separatedBy: "\r\n")
            .filter { !$0.hasSuffix(" transport-cc") }.joined(separator: "\r\n")
        #expect(try analysis(text).transportWideCCExtensionID == nil)
    }
}
