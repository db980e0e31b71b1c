import ChorusCore
import Testing
@testable import SDP

/// The RFC 8866 parser on the captured offers: structure, typed attributes, round trips.
@Suite struct SessionDescriptionTests {
    @Test(arguments: Fixture.allCases)
    func parsesEveryFixtureAndRoundTrips(_ fixture: Fixture) throws {
        let offer = try fixture.offer
        #expect(offer.origin.networkType == "IN")
        #expect(offer.sessionName == "-")
        #expect(offer.timing == Timing(start: 0, stop: 0))
        #expect(offer.bundleGroups.count == 1)
        #expect(!offer.media.isEmpty)
        // Writing and reading back gives the same value, and the writer is stable.
        let reparsed = try SessionDescription(parsing: offer.text)
        #expect(reparsed == offer)
        #expect(reparsed.text == offer.text)
    }

    @Test(arguments: Fixture.allCases)
    func lineFeedOnlyParsesTheSame(_ fixture: Fixture) throws {
        let text = try fixture.text
        let lf = text.replacingOccurrences(of: "\r\n", with: "\n")
        #expect(try SessionDescription(parsing: lf) == fixture.offer)
        // No final line ending, and stray blank lines, are tolerated too.
        let trimmed = String(lf.dropLast())
        #expect(try SessionDescription(parsing: trimmed) == fixture.offer)
        #expect(try SessionDescription(parsing: lf + "\n\n") == fixture.offer)
        #expect(try SessionDescription(parsing: Array(text.utf8)) == fixture.offer)
    }

    @Test func chromeSessionAndMediaAttributes() throws {
        let offer = try Fixture.chromeAV.offer
        #expect(offer.origin.sessionID == "1450664030490672521")
        #expect(offer.bundleGroups.first?.identificationTags == ["0", "1", "2", "3"])
        #expect(offer.hasExtmapAllowMixed)
        #expect(offer.attributes.contains(
            .other(name: "msid-semantic", value: " WMS 42bf62ca-6d1e-4d1b-bd78-23c84c24096c")))
        #expect(offer.media.map(\.media) == ["audio", "video", "video", "video"])
        #expect(offer.media.map(\.mid) == ["0", "1", "2", "3"])
        let audio = offer.media[0]
        #expect(audio.port == 49709)
        #expect(audio.connection == ConnectionData(addressType: "IP4", address: "192.0.2.10"))
        #expect(audio.payloadTypes.map(\.rawValue) == [111, 63, 9, 0, 8, 13, 110, 126])
        #expect(audio.rtpMaps.first == RTPMap(payloadType: pt(111), encodingName: "opus", clockRate: 48000,
                                              encodingParameters: "2"))
        #expect(audio.formatParameters.first?.parameter("useinbandfec") == "1")
        #expect(audio.rtcpFeedback == [RTCPFeedback(payloadType: pt(111), type: "transport-cc")])
        #expect(audio.setup == .actpass)
        #expect(audio.direction == .sendrecv)
        #expect(audio.mediaStreamID == MediaStreamID(streamID: "42bf62ca-6d1e-4d1b-bd78-23c84c24096c",
                                                     trackID: "af6f3080-8375-4260-8763-ac344c000bbf"))
        #expect(audio.hasRTCPMux && audio.hasRTCPReducedSize)
        #expect(audio.iceOptions == ["trickle"])
        #expect(audio.ssrcs == [SSRC(287706163)])
        let candidates = audio.candidates
        #expect(candidates.count == 4)
        #expect(candidates[1].address == "2001:db8::a")
        #expect(candidates[1].port == 49668)
        #expect(candidates[2].transport == "tcp")
        #expect(candidates[2].tcpType == "active")
        #expect(candidates[0].extensionValue("network-id") == "1")
        let video = offer.media[1]
        #expect(video.port == 9)
        #expect(video.ssrcGroups == [SSRCGroup(semantics: "FID", ssrcs: [SSRC(3586512339), SSRC(3571480445)])])
        #expect(video.extensionMaps.count == 11)
        #expect(video.attributes.contains(.other(name: "rtcp-xr", value: "rcvr-rtt=all")))
    }

    @Test func firefoxBundleOnlyAndExtmapDirections() throws {
        let offer = try Fixture.firefoxAV.offer
        #expect(offer.direction == .sendrecv)
        #expect(offer.fingerprints.count == 1)
        #expect(offer.origin.username == "mozilla...THIS_IS_SDPARTA-99.0")
        let audio = offer.media[0]
        #expect(audio.extensionMaps[1] == ExtensionMap(id: 2, direction: .recvonly,
                                                      uri: "urn:ietf:params:rtp-hdrext:csrc-audio-level"))
        #expect(audio.hasEndOfCandidates)
        #expect(audio.candidates.map(\.component) == [1, 1, 1, 1, 2, 2, 2, 2])
        #expect(audio.candidates[0].address == "host-1.invalid")
        for video in offer.media.dropFirst() {
            #expect(video.port == 0)
            #expect(video.isBundleOnly)
            #expect(video.isInUse)
            #expect(video.hasExtmapAllowMixed)
        }
        #expect(offer.media[1].mediaStreamID?.streamID == "{36efc568-8eac-4588-9b09-3233f7b56d96}")
    }

    @Test func simulcastAndRIDs() throws {
        let video = try Fixture.chromeSimulcast.offer.media[1]
        #expect(video.rids.map(\.id) == ["h", "m", "l"])
        #expect(video.rids.allSatisfy { $0.direction == .send })
        #expect(video.simulcast?.send.map { $0.map(\.rid) } == [["h"], ["m"], ["l"]])
        #expect(video.ssrcs.isEmpty)
        let complex = try #require(Simulcast(parsing: "send 1,~4;2;3 recv c"))
        #expect(complex.send == [[.init(rid: "1"), .init(rid: "4", paused: true)],
                                 [.init(rid: "2")], [.init(rid: "3")]])
        #expect(complex.receive == [[.init(rid: "c")]])
        #expect(complex.value == "send 1,~4;2;3 recv c")
        #expect(Simulcast(parsing: "send rid=h;m")?.send.count == 2)
        #expect(Simulcast(parsing: "send h send m") == nil)
        #expect(RID(parsing: "h send max-width=1280;max-height=720")?.restrictions == "max-width=1280;max-height=720")
    }

    @Test func aiortcOffersThreeHashFunctions() throws {
        let offer = try Fixture.aiortcAV.offer
        let fingerprints = offer.media[0].fingerprints
        #expect(fingerprints.map(\.hashFunction) == ["sha-256", "sha-384", "sha-512"])
        #expect(fingerprints.map(\.digest.count) == [32, 48, 64])
        #expect(fingerprints.allSatisfy { $0.isSupported })
        #expect(fingerprints[0].hexDigest.hasPrefix("1B:AC:42"))
        #expect(offer.media[0].candidates[0].foundation == "f957a2332b1715da3b0ef8ba684454eb")
    }

    @Test func typedAttributeValues() {
        #expect(RTCPFeedback(parsing: "* nack")?.payloadType == nil)
        #expect(RTCPFeedback(parsing: "96 ccm fir")?.parameter == "fir")
        #expect(RTCPFeedback(parsing: "96 ccm fir")?.isSameMessage(as: .fullIntraRequest) == true)
        #expect(FormatParameters(parsing: "101 0-15")?.parameters == "0-15")
        #expect(FormatParameters(parsing: "63 111/111")?.payloadType == pt(63))
        #expect(FormatParameters(parsing: "102 Packetization-Mode=1; profile-level-id=42e01f")?
            .parameter("packetization-mode") == "1")
        #expect(CertificateFingerprint(parsing: "SHA-256 " + Array(repeating: "ab", count: 32).joined(separator: ":"))?
            .hashFunction == "sha-256")
        #expect(CertificateFingerprint(parsing: "sha-256 AB:CD") == nil, "digest length must match sha-256")
        let signed = "sha-1 +A:" + Array(repeating: "00", count: 19).joined(separator: ":")
        #expect(CertificateFingerprint(parsing: signed) == nil, "a sign is not a hex digit")
        #expect(CertificateFingerprint(parsing: "x-new-hash AB:CD")?.isSupported == false)
        #expect(ExtensionMap(parsing: "0 urn:x") == nil)
        #expect(ExtensionMap(parsing: "256 urn:x") == nil)
        #expect(ExtensionMap(parsing: "4096/sendonly urn:x")?.direction == .sendonly)
        #expect(ExtensionMap(parsing: "3/sideways urn:x") == nil)
        #expect(SSRCAttribute(parsing: "4294967296 cname:x") == nil)
        #expect(SSRCAttribute(parsing: "1 cname:a:b")?.attributeValue == "a:b")
        #expect(Candidate(parsing: "1 1 udp 1 192.0.2.1 70000 typ host") == nil)
        #expect(RTPMap(parsing: "128 opus/48000/2") == nil)
        #expect(RTPMap(parsing: "96 VP8") == nil)
        #expect(Attribute(name: "rtcp-mux", value: "x") == .other(name: "rtcp-mux", value: "x"))
        #expect(Attribute(name: "setup", value: "sideways") == nil)
    }

    @Test func writesAttributesBackVerbatim() throws {
        let lines = [
            "a=rtpmap:111 opus/48000/2", "a=fmtp:111 minptime=10;useinbandfec=1", "a=rtcp-fb:* nack pli",
            "a=extmap:2/recvonly urn:ietf:params:rtp-hdrext:csrc-audio-level",
            "a=candidate:1 1 udp 2130706431 192.0.2.1 3478 typ host generation 0",
            "a=ssrc-group:FID 1 2", "a=ssrc:1 cname:x", "a=msid:- track", "a=rid:h send",
            "a=simulcast:send h;m;l", "a=group:BUNDLE 0 1", "a=ice-options:trickle ice2", "a=bundle-only",
            "a=x-unknown:anything at all", "a=x-flag",
        ]
        let text = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n" + lines.map { $0 + "\r\n" }.joined()
        let parsed = try SessionDescription(parsing: text)
        #expect(parsed.attributes.map(\.line) == lines)
        #expect(parsed.text == text)
    }
}
