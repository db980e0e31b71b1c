import ChorusCore
import Foundation
import Testing
@testable import SDP

/// Offers edited to break one shape rule each: the error must name that rule.
@Suite struct OfferErrorTests {
    func analyse(_ text: String, videoSlots: Int = 9) throws -> OfferAnalysis {
        try OfferAnalysis(offer: SessionDescription(parsing: text), videoSlots: videoSlots)
    }

    func expectError(_ expected: SDPOfferError, _ text: String, videoSlots: Int = 9,
                     sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(throws: expected, sourceLocation: sourceLocation) { try analyse(text, videoSlots: videoSlots) }
    }

    @Test func withoutOpus() throws {
        expectError(.noOpus, try Fixture.chromeAV.text.removingLines { $0 == "a=rtpmap:111 opus/48000/2" })
        expectError(.noOpus, try Fixture.firefoxAudioOnly.text.replacingLines(
            "a=rtpmap:109 opus/48000/2", with: "a=rtpmap:109 opus/16000/2"))
        expectError(.noOpus, try Fixture.aiortcAudioOnly.text.replacingLines(
            "m=audio 34911 UDP/TLS/RTP/SAVPF 96 9 0 8", with: "m=audio 34911 UDP/TLS/RTP/SAVPF 9 0 8"))
        #expect(SDPOfferError.noOpus.code == "noOpus")
    }

    @Test func withoutBundle() throws {
        expectError(.noBundle(detail: "the offer has no a=group:BUNDLE"),
                    try Fixture.chromeAV.text.removingLines { $0.hasPrefix("a=group:BUNDLE") })
        expectError(.noBundle(detail: "no a=group:BUNDLE lists every audio and video m-line"),
                    try Fixture.firefoxAV.text.replacingLines("a=group:BUNDLE 0 1 2 3", with: "a=group:BUNDLE 0 1 2"))
        expectError(.noBundle(detail: "a=group:BUNDLE names mid 7, which no m-line has"),
                    try Fixture.aiortcAV.text.replacingLines("a=group:BUNDLE 0 1 2 3",
                                                             with: "a=group:BUNDLE 0 1 2 3 7"))
        #expect(SDPOfferError.noBundle(detail: "").code == "noBundle")
    }

    @Test func withoutRtcpMux() throws {
        expectError(.noRtcpMux(mid: "0"), try Fixture.chromeAudioOnly.text.removingLines { $0 == "a=rtcp-mux" })
        let onlyVideo = try Fixture.firefoxAV.text.sessionAndSections
        let edited = onlyVideo.session + onlyVideo.sections[0] + onlyVideo.sections[1]
            + onlyVideo.sections[2].removingLines { $0 == "a=rtcp-mux" } + onlyVideo.sections[3]
        expectError(.noRtcpMux(mid: "2"), edited)
        #expect(SDPOfferError.noRtcpMux(mid: "2").code == "noRtcpMux")
    }

    @Test func withoutFingerprint() throws {
        expectError(.noFingerprint, try Fixture.chromeAV.text.removingLines { $0.hasPrefix("a=fingerprint:") })
        expectError(.noFingerprint, try Fixture.aiortcAV.text.removingLines { $0.hasPrefix("a=fingerprint:") })
        let md5 = "a=fingerprint:md5 " + Array(repeating: "AB", count: 16).joined(separator: ":")
        let firefox = try Fixture.firefoxAudioOnly.text.removingLines { $0.hasPrefix("a=fingerprint:") }
            .replacingLines("a=sendrecv", with: "a=sendrecv\r\n" + md5)
        expectError(.unsupportedFingerprint(hashFunctions: ["md5"]), firefox)
        // Only one of aiortc's three hash functions is needed.
        let onlySHA512 = try Fixture.aiortcAudioOnly.text.removingLines {
            $0.hasPrefix("a=fingerprint:sha-256") || $0.hasPrefix("a=fingerprint:sha-384")
        }
        #expect(try analyse(onlySHA512).fingerprints.map(\.hashFunction) == ["sha-512"])
    }

    @Test func iceCredentials() throws {
        expectError(.noIceCredentials, try Fixture.chromeAV.text.removingLines { $0.hasPrefix("a=ice-pwd:") })
        expectError(.invalidIceCredentials, try Fixture.aiortcAudioOnly.text.replacingLines(
            "a=ice-ufrag:p2t6", with: "a=ice-ufrag:p2t"))
        expectError(.invalidIceCredentials, try Fixture.aiortcAudioOnly.text.replacingLines(
            "a=ice-ufrag:p2t6", with: "a=ice-ufrag:p2t6:x"))
        expectError(.invalidIceCredentials, try Fixture.chromeAudioOnly.text.replacingLines(
            "a=ice-pwd:053Q5Yk1Co8XGFMbN1tW4/vq", with: "a=ice-pwd:short"))
        // Session-level credentials serve every section that has none.
        var text = try Fixture.chromeAudioOnly.text.removingLines { $0.hasPrefix("a=ice-") }
        text = text.replacingLines("a=group:BUNDLE 0",
                                   with: "a=group:BUNDLE 0\r\na=ice-ufrag:sess\r\na=ice-pwd:0123456789012345678901")
        #expect(try analyse(text).iceUfrag == "sess")
    }

    @Test func setupRoles() throws {
        let passive = try Fixture.chromeAudioOnly.text.replacingLines("a=setup:actpass", with: "a=setup:passive")
        #expect(try analyse(passive).localSetup == .active)
        let active = try Fixture.chromeAudioOnly.text.replacingLines("a=setup:actpass", with: "a=setup:active")
        #expect(try analyse(active).localSetup == .passive)
        let missing = try Fixture.chromeAudioOnly.text.removingLines { $0.hasPrefix("a=setup") }
        #expect(try analyse(missing).remoteSetup == .active)
        let holdconn = try Fixture.chromeAudioOnly.text.replacingLines("a=setup:actpass", with: "a=setup:holdconn")
        expectError(.unsupportedSetup(.holdconn), holdconn)
    }

    @Test func audioCount() throws {
        let parts = try Fixture.chromeAV.text.sessionAndSections
        let secondAudio = parts.sections[0].replacingLines("a=mid:0", with: "a=mid:9")
        let two = parts.session.replacingLines("a=group:BUNDLE 0 1 2 3", with: "a=group:BUNDLE 0 1 2 3 9")
            + parts.sections.joined() + secondAudio
        expectError(.multipleAudio(count: 2), two)
        let none = parts.session + parts.sections.dropFirst().joined()
        expectError(.noAudio, none)
        // A second audio m-line the offerer disabled (port 0, no bundle-only) is only rejected.
        let disabled = secondAudio.replacingOccurrences(of: "m=audio 49709", with: "m=audio 0")
        let analysis = try analyse(parts.session + parts.sections.joined() + disabled)
        #expect(analysis.sections.last?.role == .rejected(.disabledByOfferer))
        #expect(analysis.bundleMids == ["0", "1", "2", "3"])
    }

    @Test func videoSenders() throws {
        let aiortc = try Fixture.aiortcAV.text.sessionAndSections
        let twoSenders = aiortc.session + aiortc.sections[0] + aiortc.sections[1]
            + aiortc.sections[2].replacingLines("a=recvonly", with: "a=sendonly") + aiortc.sections[3]
        expectError(.multipleVideoSenders(count: 2), twoSenders)
        let chrome = try Fixture.chromeAV.text.sessionAndSections
        let sendrecvTwice = chrome.session + chrome.sections[0] + chrome.sections[1]
            + chrome.sections[2].replacingLines("a=recvonly", with: "a=sendrecv") + chrome.sections[3]
        expectError(.multipleVideoSenders(count: 2), sendrecvTwice)
    }

    @Test func slotLimits() throws {
        let text = try Fixture.chromeListener.text
        expectError(.tooManyVideoSlots(offered: 4, allowed: 1), text, videoSlots: 1)
        expectError(.tooManyVideoSlots(offered: 4, allowed: 0), text, videoSlots: -5)
        expectError(.tooManyVideoSlots(offered: 3, allowed: 2), try Fixture.chromeAV.text, videoSlots: 2)
        // A camera-only offer needs no slot.
        #expect(try analyse(try Fixture.chromeSimulcast.text, videoSlots: 0).camera != nil)
    }

    @Test func videoCodecChoice() throws {
        let firefox = try Fixture.firefoxAV.text.removingLines { $0 == "a=rtpmap:120 VP8/90000" }
        expectError(.noVideoCodec(mid: "1"), firefox)
        // Without VP8, H.264 in packetization-mode 1 is taken, with its RTX.
        let aiortc = try analyse(try Fixture.aiortcAV.text.removingLines { $0 == "a=rtpmap:97 VP8/90000" })
        #expect(aiortc.slots.allSatisfy { $0.codec.name == .h264 && $0.codec.payloadType == pt(99) })
        #expect(aiortc.slots.allSatisfy { $0.codec.rtxPayloadType == pt(100) })
        let chrome = try analyse(try Fixture.chromeAV.text.removingLines { $0 == "a=rtpmap:96 VP8/90000" })
        #expect(chrome.camera?.codec.payloadType == pt(102), "mode-1 profile 42001f; 104 is mode 0")
        #expect(chrome.camera?.codec.rtxPayloadType == pt(103))
        // packetization-mode 0 only: no acceptable codec.
        let modeZero = try Fixture.aiortcAV.text.removingLines { $0 == "a=rtpmap:97 VP8/90000" }
            .replacingOccurrences(of: "packetization-mode=1", with: "packetization-mode=0")
        expectError(.noVideoCodec(mid: "1"), modeZero)
    }

    @Test func midsAndProtocols() throws {
        let chrome = try Fixture.chromeAV.text
        expectError(.noMid(mLineIndex: 2), chrome.removingLines { $0 == "a=mid:2" })
        expectError(.duplicateMid("1"), chrome.replacingLines("a=mid:2", with: "a=mid:1"))
        let avp = chrome.replacingOccurrences(of: "m=audio 49709 UDP/TLS/RTP/SAVPF", with: "m=audio 49709 RTP/AVP")
        expectError(.unsupportedProtocol(mid: "0", proto: "RTP/AVP"), avp)
    }

    @Test func dataChannelAndInactiveSectionsAreRejected() throws {
        let parts = try Fixture.chromeAV.text.sessionAndSections
        let data = "m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=mid:4\r\n"
            + "a=sctp-port:5000\r\n"
        let text = parts.session.replacingLines("a=group:BUNDLE 0 1 2 3", with: "a=group:BUNDLE 0 1 2 3 4")
            + parts.sections[0] + parts.sections[1] + parts.sections[2]
            + parts.sections[3].replacingLines("a=recvonly", with: "a=inactive") + data
        let analysis = try analyse(text)
        #expect(analysis.sections.map(\.role) == [.audio, .cameraAndSlot, .slot, .rejected(.inactive),
                                                  .rejected(.unsupportedMedia)])
        #expect(analysis.bundleMids == ["0", "1", "2"])
        #expect(analysis.slots.map(\.mid) == ["1", "2"])
        #expect(analysis.rejectedSections.map(\.firstFormat) == ["96", "webrtc-datachannel"])
    }

    @Test func everyErrorHasAStableCodeAndAMessage() {
        let errors: [SDPOfferError] = [
            .tooLarge(bytes: 2, limit: 1), .malformed(line: 3, reason: "x"), .noAudio, .multipleAudio(count: 2),
            .noOpus, .multipleVideoSenders(count: 2), .tooManyVideoSlots(offered: 3, allowed: 2),
            .noVideoCodec(mid: "1"), .unsupportedProtocol(mid: "0", proto: "RTP/AVP"), .noMid(mLineIndex: 1),
            .duplicateMid("1"), .noBundle(detail: "x"), .noRtcpMux(mid: "0"), .noIceCredentials,
            .invalidIceCredentials, .noFingerprint, .unsupportedFingerprint(hashFunctions: ["md5"]),
            .unsupportedSetup(.holdconn), .tooManySimulcastStreams(mid: "1", offered: 4, allowed: 3),
            .unknownSimulcastRID(mid: "1", rid: "m"), .duplicateSimulcastRID(mid: "1", rid: "h"),
            .ridExcludesCodec(mid: "1", rid: "h", payloadType: PayloadType(masking: 96)),
        ]
        #expect(errors.map(\.code) == [
            "tooLarge", "malformed", "noAudio", "multipleAudio", "noOpus", "multipleVideoSenders",
            "tooManyVideoSlots", "noVideoCodec", "unsupportedProtocol", "noMid", "duplicateMid", "noBundle",
            "noRtcpMux", "noIceCredentials", "invalidIceCredentials", "noFingerprint", "unsupportedFingerprint",
            "unsupportedSetup", "tooManySimulcastStreams", "unknownSimulcastRID", "duplicateSimulcastRID",
            "ridExcludesCodec",
        ])
        #expect(errors.allSatisfy { !$0.message.isEmpty && $0.description.hasPrefix($0.code + ": ") })
    }
}
