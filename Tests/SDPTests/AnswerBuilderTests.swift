import ChorusCore
import Foundation
import Testing
@testable import SDP

/// Answers to every fixture, re-parsed with our own parser and checked section by section.
@Suite struct AnswerBuilderTests {
    @Test(arguments: Fixture.allCases)
    func answerStructure(_ fixture: Fixture) throws {
        let offer = try fixture.offer
        let analysis = try fixture.analysis()
        let local = try localParameters(for: analysis)
        let text = try AnswerBuilder(analysis: analysis, local: local).buildText()
        #expect(!text.replacingOccurrences(of: "\r\n", with: "").contains("\n"), "CRLF line endings only")
        #expect(text.hasSuffix("\r\n"))
        let answer = try SessionDescription(parsing: text)
        #expect(answer.text == text)

        #expect(answer.isICELite)
        // Session-level transport defaults, which rejected sections inherit (aiortc checks them).
        #expect(answer.iceUfrag == local.iceUfrag && answer.icePwd == local.icePwd)
        #expect(answer.fingerprints == [local.fingerprint])
        #expect(answer.setup == .passive)
        #expect(answer.bundleGroups.map(\.identificationTags) == [analysis.bundleMids])
        #expect(answer.attributes.contains(.other(name: "msid-semantic", value: "WMS *")))
        #expect(answer.hasExtmapAllowMixed == offer.hasExtmapAllowMixed)
        #expect(answer.media.map(\.media) == offer.media.map(\.media))
        #expect(answer.media.map(\.mid) == offer.media.map(\.mid))

        for (index, section) in answer.media.enumerated() {
            let plan = analysis.sections[index]
            if plan.isRejected {
                #expect(section.port == 0)
                continue
            }
            try checkTransport(section, local: local, analysis: analysis,
                               isFirst: section.mid == analysis.bundleMids.first)
            #expect(section.direction == offer.direction(of: offer.media[index]).reversed)
            #expect(section.hasRTCPMux)
            #expect(section.hasRTCPReducedSize == offer.media[index].hasRTCPReducedSize)
            #expect(section.hasExtmapAllowMixed == offer.media[index].hasExtmapAllowMixed)
            try checkExtensionMaps(section, offered: offer.media[index], analysis: analysis)
            switch plan.role {
            case .audio: try checkAudio(section, analysis: analysis, local: local)
            case .camera, .slot, .cameraAndSlot: try checkVideo(section, plan: plan, analysis: analysis, local: local)
            case .rejected: break
            }
        }
    }

    func checkTransport(_ section: MediaDescription, local: LocalParameters, analysis: OfferAnalysis,
                        isFirst: Bool) throws {
        #expect(section.port == local.candidatePort)
        #expect(section.connection == ConnectionData(addressType: "IP4", address: local.candidateAddress))
        #expect(section.iceUfrag == local.iceUfrag)
        #expect(section.icePwd == local.icePwd)
        #expect(section.fingerprints == [local.fingerprint])
        #expect(section.setup == .passive)
        #expect(!section.isBundleOnly)
        // In every accepted section, not only the BUNDLE tag's (aiortc reads the last one's).
        let candidate = try #require(section.candidates.first)
        #expect(section.candidates.count == 1)
        #expect(candidate.value == "1 1 udp 2130706431 203.0.113.7 40000 typ host")
        #expect(section.hasEndOfCandidates)
    }

    /// The answer echoes exactly the supported extensions, same IDs, mirrored directions.
    /// The transport-wide sequence number only when transport-cc is negotiated; the RID
    /// extensions only on a camera section that negotiated simulcast.
    func checkExtensionMaps(_ section: MediaDescription, offered: MediaDescription, analysis: OfferAnalysis) throws {
        let simulcast = analysis.camera.map { $0.isSimulcast && $0.mid == section.mid } ?? false
        let supported = section.media == "audio" ? HeaderExtensions.audioURIs
            : HeaderExtensions.videoURIs + (simulcast ? HeaderExtensions.simulcastURIs : [])
        let expected = offered.extensionMaps.filter {
            supported.contains($0.uri)
                && ($0.uri != ExtensionMap.URI.transportWideCC || $0.id == analysis.transportWideCCExtensionID)
        }
        #expect(section.extensionMaps.map(\.id) == expected.map(\.id))
        #expect(section.extensionMaps.map(\.uri) == expected.map(\.uri))
        #expect(section.extensionMaps.map(\.direction) == expected.map { $0.direction?.reversed })
    }

    func checkAudio(_ section: MediaDescription, analysis: OfferAnalysis, local: LocalParameters) throws {
        let opus = analysis.audio.opusPayloadType
        #expect(section.payloadTypes == [opus])
        #expect(section.rtpMaps == [RTPMap(payloadType: opus, encodingName: "opus", clockRate: 48000,
                                          encodingParameters: "2")])
        #expect(section.formatParameters == [FormatParameters(payloadType: opus,
                                                               parameters: "minptime=10;useinbandfec=1;usedtx=1")])
        // transport-cc, the only audio feedback, when negotiated: the server reports arrivals.
        let transportCC = analysis.transportWideCCExtensionID != nil
        #expect(section.rtcpFeedback.map(\.value) == (transportCC ? ["\(opus.rawValue) transport-cc"] : []))
        if analysis.audio.answerDirection.sends {
            #expect(section.ssrcAttributes == [SSRCAttribute(ssrc: local.audioStream.ssrc, attribute: "cname",
                                                             attributeValue: "chorus")])
            #expect(section.mediaStreamID == MediaStreamID(streamID: "mix", trackID: "mix-audio"))
        } else {
            #expect(section.ssrcAttributes.isEmpty)
            #expect(section.mediaStreamID == nil)
        }
    }

    func checkVideo(_ section: MediaDescription, plan: SectionPlan, analysis: OfferAnalysis,
                    local: LocalParameters) throws {
        let slotIndex = analysis.slotIndex(ofMLine: plan.mLineIndex)
        let video = try #require(slotIndex.map { analysis.slots[$0] } ?? analysis.camera?.video)
        let codec = video.codec
        #expect(section.payloadTypes == [codec.payloadType] + (codec.rtxPayloadType.map { [$0] } ?? []))
        #expect(section.rtpMaps.first?.encodingName == codec.name.rawValue)
        if let rtx = codec.rtxPayloadType {
            #expect(section.rtpMaps.last == RTPMap(payloadType: rtx, encodingName: "rtx", clockRate: 90000))
            #expect(section.formatParameters.last?.parameter("apt") == String(codec.payloadType.rawValue))
        }
        // Feedback: only what the offer listed for the codec, and only what Chorus implements.
        let offered = Set(codec.feedback.map { $0.with(payloadType: nil) })
        for feedback in section.rtcpFeedback {
            #expect(feedback.payloadType == codec.payloadType)
            #expect(offered.contains(feedback.with(payloadType: nil)))
        }
        // The camera's simulcast layers mirrored as RIDs it receives, in the offer's order.
        if let camera = analysis.camera, camera.mid == section.mid, camera.isSimulcast {
            #expect(section.rids == camera.simulcastLayers.map { RID(id: $0.rid, direction: .recv) })
            #expect(section.simulcast?.send == [])
            #expect(section.simulcast?.receive.map { $0.map(\.rid) } == camera.simulcastLayers.map { [$0.rid] })
        } else {
            #expect(section.rids.isEmpty)
            #expect(section.simulcast == nil)
        }
        let sent = section.ssrcAttributes.map(\.ssrc)
        if let slotIndex {
            let stream = local.slotStreams[slotIndex]
            #expect(section.mediaStreamID == MediaStreamID(streamID: stream.streamID, trackID: stream.trackID))
            if codec.rtxPayloadType != nil {
                let rtx = try #require(stream.rtxSSRC)
                #expect(sent == [stream.ssrc, rtx])
                #expect(section.ssrcGroups == [SSRCGroup(semantics: "FID", ssrcs: [stream.ssrc, rtx])])
            } else {
                #expect(sent == [stream.ssrc])
            }
        } else {
            #expect(section.direction == .recvonly)
            #expect(sent.isEmpty)
            #expect(section.mediaStreamID == nil)
        }
    }

    @Test func chromeAnswerInDetail() throws {
        let analysis = try Fixture.chromeAV.analysis()
        let answer = try AnswerBuilder(analysis: analysis, local: localParameters(for: analysis)).build()
        let camera = answer.media[1]
        #expect(camera.direction == .sendrecv)
        #expect(camera.rtcpFeedback.map(\.value) == ["96 goog-remb", "96 transport-cc", "96 ccm fir", "96 nack",
                                                     "96 nack pli"])
        #expect(analysis.transportWideCCExtensionID == 3)
        #expect(answer.media.allSatisfy { $0.extensionMaps.contains { $0.value == "3 " + ExtensionMap.URI.transportWideCC } })
        #expect(camera.formatParameters.map(\.value) == ["97 apt=96"])
        #expect(answer.media[2].direction == .sendonly)
        #expect(answer.media[0].direction == .sendrecv)
        #expect(answer.origin.value == "- 4611686018427387904 2 IN IP4 127.0.0.1")
        #expect(answer.text.hasPrefix(
            "v=0\r\no=- 4611686018427387904 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=ice-lite\r\n"))
    }

    @Test func firefoxAnswerMirrorsExtmapDirection() throws {
        let analysis = try Fixture.firefoxAV.analysis()
        let answer = try AnswerBuilder(analysis: analysis, local: localParameters(for: analysis)).build()
        #expect(answer.media[0].extensionMaps.map(\.value) == [
            "1 urn:ietf:params:rtp-hdrext:ssrc-audio-level",
            "2/sendonly urn:ietf:params:rtp-hdrext:csrc-audio-level",
            "3 urn:ietf:params:rtp-hdrext:sdes:mid",
            "7 " + ExtensionMap.URI.transportWideCC,
        ])
        #expect(answer.media[0].rtcpFeedback.map(\.value) == ["109 transport-cc"])
        #expect(answer.media.dropFirst().allSatisfy { $0.port == 40000 && !$0.isBundleOnly })
        #expect(answer.media[1].direction == .sendrecv)
        #expect(answer.media[2].direction == .sendonly)
    }

    @Test func listenerGetsTheMixOnly() throws {
        let analysis = try Fixture.chromeListener.analysis()
        let answer = try AnswerBuilder(analysis: analysis, local: localParameters(for: analysis)).build()
        #expect(answer.media[0].direction == .sendonly)
        #expect(answer.media[0].ssrcAttributes.map(\.ssrc) == [SSRC(777)])
        #expect(answer.media.dropFirst().map(\.direction) == [.sendonly, .sendonly, .sendonly, .sendonly])
    }

    @Test func h264AnswerKeepsProfile() throws {
        let text = try Fixture.aiortcAV.text.removingLines { $0 == "a=rtpmap:97 VP8/90000" }
        let analysis = try OfferAnalysis(offer: SessionDescription(parsing: text), videoSlots: 9)
        let answer = try AnswerBuilder(analysis: analysis, local: localParameters(for: analysis)).build()
        #expect(answer.media[1].rtpMaps.first?.value == "99 H264/90000")
        #expect(answer.media[1].formatParameters.map(\.value) == [
            "99 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f", "100 apt=99",
        ])
        #expect(answer.media[1].rtcpFeedback.map(\.value) == ["99 nack", "99 nack pli", "99 goog-remb"])
    }

    @Test func rejectedSectionsKeepMidAndFirstFormat() throws {
        let parts = try Fixture.chromeAudioOnly.text.sessionAndSections
        let data = "m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\n"
        let text = parts.session.replacingLines("a=group:BUNDLE 0", with: "a=group:BUNDLE 0 1")
            + parts.sections[0] + data
        let analysis = try OfferAnalysis(offer: SessionDescription(parsing: text), videoSlots: 0)
        let answer = try AnswerBuilder(analysis: analysis, local: localParameters(for: analysis)).build()
        #expect(answer.media[1].lines == ["m=application 0 UDP/DTLS/SCTP webrtc-datachannel", "c=IN IP4 0.0.0.0",
                                          "a=mid:1"])
        #expect(answer.bundleGroups.first?.identificationTags == ["0"])
    }

    @Test func ipv6HostCandidate() throws {
        let analysis = try Fixture.firefoxAudioOnly.analysis()
        let local = try localParameters(for: analysis, address: "2001:db8::7", port: 3478)
        let answer = try AnswerBuilder(analysis: analysis, local: local).build()
        #expect(answer.media[0].connection == ConnectionData(addressType: "IP6", address: "2001:db8::7"))
        #expect(answer.media[0].candidates.first?.value == "1 1 udp 2130706431 2001:db8::7 3478 typ host")
    }

    @Test func localParametersAreChecked() throws {
        let analysis = try Fixture.aiortcAV.analysis()
        let good = try localParameters(for: analysis)
        func expectInvalid(_ field: String, _ edit: (inout LocalParameters) -> Void,
                           sourceLocation: SourceLocation = #_sourceLocation) {
            var local = good
            edit(&local)
            #expect(throws: AnswerError.invalidLocalParameter(field), sourceLocation: sourceLocation) {
                try AnswerBuilder(analysis: analysis, local: local).build()
            }
        }
        expectInvalid("iceUfrag") { $0.iceUfrag = "a:b" }
        expectInvalid("icePwd") { $0.icePwd = "short" }
        expectInvalid("candidateAddress") { $0.candidateAddress = "192.0.2.1\r\na=injected" }
        expectInvalid("candidateAddress") { $0.candidateAddress = "host.example" }
        expectInvalid("candidateAddress") { $0.candidateAddress = "1::2::3" }
        expectInvalid("candidatePort") { $0.candidatePort = 0 }
        expectInvalid("cname") { $0.cname = "two words" }
        expectInvalid("streamID") { $0.slotStreams[0].streamID = "" }
        expectInvalid("trackID") { $0.audioStream.trackID = String(repeating: "t", count: 65) }
        expectInvalid("fingerprint") {
            $0.fingerprint = CertificateFingerprint(hashFunction: "sha-256", digest: [1, 2])
        }
        var fewer = good
        fewer.slotStreams.removeLast()
        #expect(throws: AnswerError.slotStreamCount(expected: 2, provided: 1)) {
            try AnswerBuilder(analysis: analysis, local: fewer).build()
        }
        var noRTX = good
        noRTX.slotStreams[1].rtxSSRC = nil
        #expect(throws: AnswerError.missingRTXSSRC(mid: "3")) {
            try AnswerBuilder(analysis: analysis, local: noRTX).build()
        }
        for address in ["::", "::1", "2001:db8::a", "fe80::1:2:3:4:5:6", "::ffff:192.0.2.1", "1:2:3:4:5:6:7:8"] {
            #expect(LocalParameters.isIPLiteral(address), "\(address)")
        }
        for address in [":", ":1", "1:", "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9", "12345::", "::1.2.3", "fe80::1%eth0"] {
            #expect(!LocalParameters.isIPLiteral(address), "\(address)")
        }
    }
}
