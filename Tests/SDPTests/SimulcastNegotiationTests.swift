import ChorusCore
import Testing
@testable import SDP

/// Rid-based simulcast on the camera (RFC 8851, RFC 8853): the layers of the browsers' real
/// offers, their order, alternatives and paused streams, the mirrored answer, and the offers
/// that are refused (with the error naming the problem) or answered as one stream.
@Suite("SDP: simulcast negotiation")
struct SimulcastNegotiationTests {
    func analyse(_ text: String) throws -> OfferAnalysis {
        try OfferAnalysis(offer: SessionDescription(parsing: text), videoSlots: 9)
    }

    func answer(_ analysis: OfferAnalysis) throws -> SessionDescription {
        try AnswerBuilder(analysis: analysis, local: localParameters(for: analysis)).build()
    }

    func layers(_ pairs: [(String, Bool)]) -> [SimulcastLayer] {
        pairs.map { SimulcastLayer(rid: $0.0, paused: $0.1) }
    }

    /// Chromium 156, `sendEncodings` listed high first (`h;m;l`), no `a=ssrc`.
    @Test func chromiumHighFirst() throws {
        let camera = try #require(try Fixture.chromeSimulcast.analysis().camera)
        #expect(camera.isSimulcast)
        #expect(camera.simulcastLayers == layers([("h", false), ("m", false), ("l", false)]))
        #expect(camera.rtpStreamIDExtension == 10)
        #expect(camera.repairedRTPStreamIDExtension == 11)
        #expect(camera.extensions.mid == 4)
        #expect(camera.primarySSRC == nil && camera.ssrcs.isEmpty)
    }

    /// Chromium 156 and Firefox ESR 153 given the same `sendEncodings`, listed low first:
    /// both write `a=simulcast:send q;h;f`, the encodings' order.
    @Test(arguments: [(Fixture.chromeSimulcastQHF, UInt16(10), UInt16(11)), (.firefoxSimulcast, 9, 10)])
    func bothBrowsersKeepTheEncodingsOrder(_ fixture: Fixture, rid: UInt16, repairedRID: UInt16) throws {
        let camera = try #require(try fixture.analysis().camera)
        #expect(camera.simulcastLayers == layers([("q", false), ("h", false), ("f", false)]))
        #expect(camera.rtpStreamIDExtension == rid)
        #expect(camera.repairedRTPStreamIDExtension == repairedRID)
        #expect(camera.codec.name == .vp8)
    }

    /// Firefox announces six SSRCs, one FID group per layer, and directions on the RID extmaps.
    @Test func firefoxAnnouncesItsSSRCs() throws {
        let analysis = try Fixture.firefoxSimulcast.analysis()
        let camera = try #require(analysis.camera)
        #expect(camera.ssrcs.count == 6)
        #expect(camera.ssrcGroups.count == 3)
        #expect(camera.primarySSRC == camera.ssrcGroups.first?.ssrcs.first)
        let section = try answer(analysis).media[1]
        #expect(section.extensionMaps.map(\.value) == [
            "3 urn:ietf:params:rtp-hdrext:sdes:mid",
            "4 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time",
            "7 " + ExtensionMap.URI.transportWideCC,
            "9/recvonly urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id",
            "10/recvonly urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id",
        ])
    }

    @Test func theAnswerMirrorsTheLayers() throws {
        let answer = try answer(try Fixture.chromeSimulcast.analysis())
        let video = answer.media[1]
        #expect(video.direction == .recvonly)
        let lines = video.lines.filter { $0.hasPrefix("a=rid:") || $0.hasPrefix("a=simulcast:") }
        #expect(lines == ["a=rid:h recv", "a=rid:m recv", "a=rid:l recv", "a=simulcast:recv h;m;l"])
        #expect(video.extensionMaps.map(\.value) == [
            "2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time",
            "3 " + ExtensionMap.URI.transportWideCC,
            "4 urn:ietf:params:rtp-hdrext:sdes:mid",
            "10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id",
            "11 urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id",
        ])
        // The audio section answers no RID extension.
        #expect(!answer.media[0].lines.contains { $0.contains("rtp-stream-id") })
    }

    /// RFC 8853 §5.2: the order of `a=simulcast:send`, not of the `a=rid` lines.
    @Test func theOrderComesFromTheSimulcastAttribute() throws {
        let text = try Fixture.chromeSimulcast.text.replacingLines("a=simulcast:send h;m;l", with: "a=simulcast:send l;h;m")
        let analysis = try analyse(text)
        #expect(analysis.camera?.simulcastLayers.map(\.rid) == ["l", "h", "m"])
        #expect(try answer(analysis).media[1].simulcast?.receive.map { $0.map(\.rid) } == [["l"], ["h"], ["m"]])
    }

    /// Of a stream's alternatives the first is taken; paused streams are kept and marked.
    @Test func alternativesAndPausedStreams() throws {
        let text = try Fixture.chromeSimulcast.text.replacingLines("a=simulcast:send h;m;l", with: "a=simulcast:send h,m;~l")
        let analysis = try analyse(text)
        #expect(analysis.camera?.simulcastLayers == layers([("h", false), ("l", true)]))
        let video = try answer(analysis).media[1]
        #expect(video.lines.filter { $0.hasPrefix("a=rid:") || $0.hasPrefix("a=simulcast:") }
                == ["a=rid:h recv", "a=rid:l recv", "a=simulcast:recv h;~l"])
        let pausedFirst = try Fixture.chromeSimulcast.text.replacingLines("a=simulcast:send h;m;l",
                                                                          with: "a=simulcast:send ~h,m;l")
        #expect(try analyse(pausedFirst).camera?.simulcastLayers == layers([("h", true), ("l", false)]))
    }

    /// The draft form some older browsers wrote.
    @Test func theDraftSyntaxIsAccepted() throws {
        let text = try Fixture.chromeSimulcast.text.replacingLines("a=simulcast:send h;m;l",
                                                                   with: "a=simulcast: send rid=h;m;l")
        #expect(try analyse(text).camera?.simulcastLayers.map(\.rid) == ["h", "m", "l"])
    }

    /// A sendrecv camera (also a slot) answers the RIDs and its own slot stream on one section.
    @Test func aSendrecvCameraWithSimulcast() throws {
        let parts = try Fixture.chromeAV.text.sessionAndSections
        let camera1 = parts.sections[1].replacingLines(
            "a=rtcp-xr:rcvr-rtt=all", with: "a=rtcp-xr:rcvr-rtt=all\r\na=rid:a send\r\na=rid:b send\r\na=simulcast:send b;a")
        let analysis = try analyse(parts.session + parts.sections[0] + camera1 + parts.sections[2] + parts.sections[3])
        let camera = try #require(analysis.camera)
        #expect(camera.isAlsoSlot)
        #expect(camera.simulcastLayers.map(\.rid) == ["b", "a"])
        #expect(analysis.slots.first?.extensions.rtpStreamID == 10)
        #expect(analysis.slots.dropFirst().allSatisfy { $0.extensions.rtpStreamID == nil })
        let answer = try answer(analysis)
        let video = answer.media[1]
        #expect(video.direction == .sendrecv)
        #expect(video.simulcast?.receive.map { $0.map(\.rid) } == [["b"], ["a"]])
        #expect(video.ssrcs == [SSRC(1000), SSRC(1001)])
        #expect(answer.media[2].rids.isEmpty && answer.media[2].simulcast == nil)
    }

    @Test func withoutSimulcastNothingChanges() throws {
        let camera = try #require(try Fixture.chromeAV.analysis().camera)
        #expect(!camera.isSimulcast && camera.simulcastLayers.isEmpty)
        #expect(camera.rtpStreamIDExtension == nil && camera.repairedRTPStreamIDExtension == nil)
        // a=rid lines alone (restrictions for one stream) are no simulcast.
        let ridsOnly = try Fixture.chromeSimulcast.text.removingLines { $0.hasPrefix("a=simulcast:") }
        let analysis = try analyse(ridsOnly)
        #expect(analysis.camera?.isSimulcast == false)
        #expect(analysis.camera?.extensions.rtpStreamID == nil)
        #expect(try answer(analysis).media[1].rids.isEmpty)
    }

    /// Without a RID extension the layers cannot be told apart: one stream is answered (a
    /// browser then sends its first encoding only).
    @Test func withoutTheRIDExtensionSimulcastIsDeclined() throws {
        let noExtension = try Fixture.chromeSimulcast.text.removingLines { $0.hasSuffix("sdes:rtp-stream-id") }
        let receiveOnly = try Fixture.firefoxSimulcast.text.replacingLines(
            "a=extmap:9/sendonly urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id",
            with: "a=extmap:9/recvonly urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id")
        for text in [noExtension, receiveOnly] {
            let analysis = try analyse(text)
            let camera = try #require(analysis.camera)
            #expect(!camera.isSimulcast)
            #expect(camera.repairedRTPStreamIDExtension == nil)
            let video = try answer(analysis).media[1]
            #expect(video.rids.isEmpty && video.simulcast == nil)
            #expect(!video.lines.contains { $0.contains("rtp-stream-id") })
        }
    }

    @Test func tooManyStreamsAreRefused() throws {
        let rids = (1...50).map { "r\($0)" }
        let text = try Fixture.chromeSimulcast.text
            .removingLines { $0.hasPrefix("a=rid:") }
            .replacingLines("a=simulcast:send h;m;l", with: rids.map { "a=rid:\($0) send" }.joined(separator: "\r\n")
                + "\r\na=simulcast:send " + rids.joined(separator: ";"))
        let error = SDPOfferError.tooManySimulcastStreams(mid: "1", offered: 50, allowed: 3)
        #expect(throws: error) { try analyse(text) }
        #expect(error.code == "tooManySimulcastStreams")
        #expect(error.message == "a=simulcast on video m-line 1 sends 50 streams; at most 3 are received")
        let four = try Fixture.chromeSimulcast.text.replacingLines(
            "a=simulcast:send h;m;l", with: "a=rid:x send\r\na=simulcast:send h;m;l;x")
        #expect(throws: SDPOfferError.tooManySimulcastStreams(mid: "1", offered: 4, allowed: 3)) { try analyse(four) }
        // Fifty alternatives of one stream are one stream, whose first alternative is taken.
        let alternatives = try Fixture.chromeSimulcast.text
            .removingLines { $0.hasPrefix("a=rid:") }
            .replacingLines("a=simulcast:send h;m;l", with: rids.map { "a=rid:\($0) send" }.joined(separator: "\r\n")
                + "\r\na=simulcast:send " + rids.joined(separator: ","))
        #expect(try analyse(alternatives).camera?.simulcastLayers.map(\.rid) == ["r1"])
    }

    @Test func aRIDWithoutItsLineIsRefused() throws {
        let missing = try Fixture.chromeSimulcast.text.removingLines { $0 == "a=rid:m send" }
        #expect(throws: SDPOfferError.unknownSimulcastRID(mid: "1", rid: "m")) { try analyse(missing) }
        let receiving = try Fixture.chromeSimulcast.text.replacingLines("a=rid:m send", with: "a=rid:m recv")
        #expect(throws: SDPOfferError.unknownSimulcastRID(mid: "1", rid: "m")) { try analyse(receiving) }
        // An alternative needs its a=rid line too, even though it is dropped.
        let alternative = try Fixture.chromeSimulcast.text.replacingLines("a=simulcast:send h;m;l",
                                                                          with: "a=simulcast:send h,z;m;l")
        let error = SDPOfferError.unknownSimulcastRID(mid: "1", rid: "z")
        #expect(throws: error) { try analyse(alternative) }
        #expect(error.description == "unknownSimulcastRID: a=simulcast on video m-line 1 names RID z, "
                + "which has no a=rid:z send line")
    }

    @Test func aRIDListedTwiceIsRefused() throws {
        for list in ["h;h;l", "h,m;m", "h;m,h"] {
            let text = try Fixture.chromeSimulcast.text.replacingLines("a=simulcast:send h;m;l",
                                                                       with: "a=simulcast:send " + list)
            #expect(throws: SDPOfferError.self) { try analyse(text) }
        }
        let text = try Fixture.chromeSimulcast.text.replacingLines("a=simulcast:send h;m;l", with: "a=simulcast:send h;h;l")
        #expect(throws: SDPOfferError.duplicateSimulcastRID(mid: "1", rid: "h")) { try analyse(text) }
        // A repeated a=rid line is harmless: the first one counts.
        let repeated = try Fixture.chromeSimulcast.text.replacingLines("a=rid:h send", with: "a=rid:h send\r\na=rid:h send pt=1")
        #expect(try analyse(repeated).camera?.simulcastLayers.count == 3)
    }

    /// `pt=` must allow the chosen codec (VP8, 96 in Chromium's offer); other restrictions are
    /// the sender's business and ignored.
    @Test func payloadTypeRestrictions() throws {
        let base = try Fixture.chromeSimulcast.text
        let excluding = base.replacingLines("a=rid:m send", with: "a=rid:m send pt=102,103")
        let error = SDPOfferError.ridExcludesCodec(mid: "1", rid: "m", payloadType: pt(96))
        #expect(throws: error) { try analyse(excluding) }
        #expect(error.code == "ridExcludesCodec")
        #expect(error.message.contains("a=rid:m") && error.message.contains("96"))
        let nothing = base.replacingLines("a=rid:m send", with: "a=rid:m send pt=x")
        #expect(throws: error) { try analyse(nothing) }
        for allowed in ["a=rid:m send pt=96,97", "a=rid:m send max-width=640;pt=102,96", "a=rid:m send max-fps=15",
                        "a=rid:m send max-width=320;max-height=180;max-br=100000"] {
            let analysis = try analyse(base.replacingLines("a=rid:m send", with: allowed))
            #expect(analysis.camera?.simulcastLayers.map(\.rid) == ["h", "m", "l"])
            // The answer never repeats restrictions.
            #expect(try answer(analysis).media[1].rids.allSatisfy { $0.restrictions == nil })
        }
        // A dropped alternative's restrictions do not matter.
        let alternative = base.replacingLines("a=simulcast:send h;m;l", with: "a=simulcast:send h;l,m")
            .replacingLines("a=rid:m send", with: "a=rid:m send pt=102")
        #expect(try analyse(alternative).camera?.simulcastLayers.map(\.rid) == ["h", "l"])
    }

    @Test func ridRestrictionsParse() throws {
        #expect(RID(parsing: "h send pt=96,97;max-width=1280")?.payloadTypes == [pt(96), pt(97)])
        #expect(RID(parsing: "h send max-width=1280;pt=100")?.payloadTypes == [pt(100)])
        #expect(RID(parsing: "h send max-width=1280")?.payloadTypes == nil)
        #expect(RID(parsing: "h send")?.payloadTypes == nil)
        #expect(RID(parsing: "h send pt=x,300")?.payloadTypes == [])
    }

    /// A simulcast attribute on a receive-only section says what the client wants to receive,
    /// which Chorus does not send: ignored.
    @Test func simulcastOnASlotIsIgnored() throws {
        let parts = try Fixture.chromeAV.text.sessionAndSections
        let slot = parts.sections[2].replacingLines("a=recvonly", with: "a=recvonly\r\na=rid:x recv\r\na=simulcast:recv x")
        let analysis = try analyse(parts.session + parts.sections[0] + parts.sections[1] + slot + parts.sections[3])
        #expect(analysis.camera?.isSimulcast == false)
        #expect(try answer(analysis).media[2].simulcast == nil)
    }
}
