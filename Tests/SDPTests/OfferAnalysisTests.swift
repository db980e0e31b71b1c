import ChorusCore
import Foundation
import Testing
@testable import SDP

/// What `OfferAnalysis` extracts from each captured offer, checked against the fixture README.
@Suite struct OfferAnalysisTests {
    @Test func chromeAudioVideoTwoSlotsTransport() throws {
        let analysis = try Fixture.chromeAV.analysis()
        #expect(analysis.iceUfrag == "y6oZ")
        #expect(analysis.icePwd == "1pwyKkkxgOP8AVHgXYmuQhuW")
        #expect(analysis.iceOptions == ["trickle"])
        #expect(analysis.fingerprints.map(\.hashFunction) == ["sha-256"])
        #expect(analysis.fingerprints.first?.hexDigest.hasPrefix("0D:10:E7:54") == true)
        #expect(analysis.remoteSetup == .actpass)
        #expect(analysis.localSetup == .passive)
        #expect(analysis.bundleMids == ["0", "1", "2", "3"])
        #expect(analysis.sessionExtmapAllowMixed)
        #expect(analysis.sections.map(\.role) == [.audio, .cameraAndSlot, .slot, .slot])
        #expect(analysis.rejectedSections.isEmpty)
    }

    @Test func chromeAudioVideoTwoSlotsAudio() throws {
        let analysis = try Fixture.chromeAV.analysis()
        let audio = analysis.audio
        #expect(audio.mid == "0")
        #expect(audio.offerDirection == .sendrecv)
        #expect(audio.opusPayloadType == pt(111))
        #expect(audio.useInbandFEC)
        #expect(audio.feedback.map(\.type) == ["transport-cc"])
        #expect(audio.extensions.ssrcAudioLevel == 1)
        #expect(audio.extensions.absSendTime == 2)
        #expect(audio.extensions.transportWideCC == 3)
        #expect(audio.extensions.mid == 4)
        #expect(audio.extensions.csrcAudioLevel == nil)
        #expect(audio.rtcpReducedSize)
        #expect(analysis.remoteAudioSSRC == SSRC(287706163))
    }

    @Test func chromeAudioVideoTwoSlotsVideo() throws {
        let analysis = try Fixture.chromeAV.analysis()
        let camera = try #require(analysis.camera)
        #expect(camera.mid == "1")
        #expect(camera.isAlsoSlot)
        #expect(camera.codec.name == .vp8)
        #expect(camera.codec.payloadType == pt(96))
        #expect(camera.codec.rtxPayloadType == pt(97))
        #expect(camera.codec.feedback.count == 5)
        #expect(camera.extensions.mid == 4)
        #expect(camera.extensions.transportWideCC == 3)
        #expect(camera.extensions.absSendTime == 2)
        #expect(camera.extensions.maps.count == 3, "toffset, video-orientation, rid, … are not negotiated")
        #expect(camera.ssrcs == [SSRC(3586512339), SSRC(3571480445)])
        #expect(camera.primarySSRC == SSRC(3586512339))
        #expect(camera.rtxSSRC == SSRC(3571480445))
        #expect(camera.rids.isEmpty)

        #expect(analysis.slots.map(\.mid) == ["1", "2", "3"])
        for slot in analysis.slots {
            #expect(slot.codec.name == .vp8)
            #expect(slot.codec.payloadType == pt(96))
            #expect(slot.codec.rtxPayloadType == pt(97))
            #expect(slot.extensions.mid == 4)
        }
        #expect(analysis.slots.map(\.offerDirection) == [.sendrecv, .recvonly, .recvonly])
    }

    @Test func chromeAudioOnly() throws {
        let analysis = try Fixture.chromeAudioOnly.analysis(videoSlots: 0)
        #expect(analysis.bundleMids == ["0"])
        #expect(analysis.iceUfrag == "7f5R")
        #expect(analysis.audio.opusPayloadType == pt(111))
        #expect(analysis.audio.extensions.ssrcAudioLevel == 1)
        #expect(analysis.audio.extensions.mid == 4)
        #expect(analysis.remoteAudioSSRC == SSRC(3763252182))
        #expect(analysis.camera == nil)
        #expect(analysis.slots.isEmpty)
    }

    @Test func chromeSimulcastCamera() throws {
        let analysis = try Fixture.chromeSimulcast.analysis()
        #expect(analysis.bundleMids == ["0", "1"])
        let camera = try #require(analysis.camera)
        #expect(camera.mid == "1")
        #expect(!camera.isAlsoSlot)
        #expect(camera.video.offerDirection == .sendonly)
        #expect(camera.codec.payloadType == pt(96))
        #expect(camera.codec.rtxPayloadType == pt(97))
        #expect(camera.rids.map(\.id) == ["h", "m", "l"])
        #expect(camera.simulcast?.send.count == 3)
        #expect(camera.ssrcs.isEmpty)
        #expect(camera.primarySSRC == nil)
        #expect(camera.extensions.mid == 4)
        #expect(analysis.slots.isEmpty)
        #expect(analysis.sections.map(\.role) == [.audio, .camera])
    }

    @Test func chromeListener() throws {
        let analysis = try Fixture.chromeListener.analysis()
        #expect(analysis.audio.offerDirection == .recvonly)
        #expect(analysis.audio.answerDirection == .sendonly)
        #expect(analysis.remoteAudioSSRC == nil)
        #expect(analysis.camera == nil)
        #expect(analysis.slots.map(\.mid) == ["1", "2", "3", "4"])
        #expect(analysis.slots.allSatisfy { $0.codec.payloadType == pt(96) && $0.codec.rtxPayloadType == pt(97) })
        #expect(analysis.bundleMids == ["0", "1", "2", "3", "4"])
        #expect(throws: SDPOfferError.tooManyVideoSlots(offered: 4, allowed: 3)) {
            try Fixture.chromeListener.analysis(videoSlots: 3)
        }
        #expect(try Fixture.chromeListener.analysis(videoSlots: 4).slots.count == 4)
    }

    @Test func firefoxAudioVideoTwoSlots() throws {
        let analysis = try Fixture.firefoxAV.analysis()
        #expect(analysis.iceUfrag == "0fec2fe1")
        #expect(analysis.icePwd == "afe5ffa69e74aaa4b4bb8bded945f3c1")
        #expect(analysis.fingerprints.first?.hexDigest.hasPrefix("AE:D2:FA") == true, "session-level fingerprint")
        #expect(analysis.iceOptions == ["trickle"])
        #expect(analysis.localSetup == .passive)
        #expect(!analysis.sessionExtmapAllowMixed)
        #expect(analysis.bundleMids == ["0", "1", "2", "3"], "bundle-only port-0 sections are accepted")
        let audio = analysis.audio
        #expect(audio.opusPayloadType == pt(109))
        #expect(audio.useInbandFEC)
        #expect(audio.opusParameters?.parameter("stereo") == "1")
        #expect(audio.feedback.map(\.type) == ["transport-cc"])
        #expect(audio.extensions.ssrcAudioLevel == 1)
        #expect(audio.extensions.csrcAudioLevel == 2)
        #expect(audio.extensions.maps.first { $0.id == 2 }?.direction == .recvonly)
        #expect(audio.extensions.mid == 3)
        #expect(audio.extensions.transportWideCC == 7)
        #expect(!audio.rtcpReducedSize)
        #expect(audio.extmapAllowMixed)
        #expect(analysis.remoteAudioSSRC == SSRC(250255316))
        let camera = try #require(analysis.camera)
        #expect(camera.mid == "1")
        #expect(camera.isAlsoSlot)
        #expect(camera.codec.payloadType == pt(120))
        #expect(camera.codec.rtxPayloadType == pt(124))
        #expect(camera.primarySSRC == SSRC(1674654127))
        #expect(camera.rtxSSRC == SSRC(1230690141))
        #expect(camera.extensions.mid == 3)
        #expect(camera.extensions.absSendTime == 4)
        #expect(camera.extensions.transportWideCC == 7)
        #expect(analysis.slots.map(\.mid) == ["1", "2", "3"])
        #expect(analysis.slots.allSatisfy { $0.rtcpReducedSize && $0.codec.payloadType == pt(120) })
        #expect(throws: SDPOfferError.tooManyVideoSlots(offered: 3, allowed: 1)) {
            try Fixture.firefoxAV.analysis(videoSlots: 1)
        }
    }

    @Test func firefoxAudioOnly() throws {
        let analysis = try Fixture.firefoxAudioOnly.analysis(videoSlots: 0)
        #expect(analysis.iceUfrag == "5643db3e")
        #expect(analysis.fingerprints.first?.hexDigest.hasPrefix("33:57:E9") == true)
        #expect(analysis.audio.opusPayloadType == pt(109))
        #expect(analysis.audio.extensions.csrcAudioLevel == 2)
        #expect(analysis.remoteAudioSSRC == SSRC(10574170))
        #expect(analysis.camera == nil && analysis.slots.isEmpty)
    }

    @Test func aiortcAudioVideoTwoSlots() throws {
        let analysis = try Fixture.aiortcAV.analysis()
        #expect(analysis.iceUfrag == "7IxT")
        #expect(analysis.icePwd == "6hnmTURu8mHu9U0ESWjvf0")
        #expect(analysis.iceOptions.isEmpty)
        #expect(analysis.fingerprints.map(\.hashFunction) == ["sha-256", "sha-384", "sha-512"])
        #expect(analysis.supportedFingerprints.count == 3)
        #expect(!analysis.sessionExtmapAllowMixed)
        let audio = analysis.audio
        #expect(audio.opusPayloadType == pt(96))
        #expect(audio.opusParameters == nil)
        #expect(!audio.useInbandFEC)
        #expect(audio.feedback.isEmpty)
        #expect(audio.extensions.mid == 1)
        #expect(audio.extensions.ssrcAudioLevel == 2)
        #expect(!audio.rtcpReducedSize)
        #expect(analysis.remoteAudioSSRC == SSRC(2712733735))
        let camera = try #require(analysis.camera)
        #expect(camera.mid == "1")
        #expect(!camera.isAlsoSlot)
        #expect(camera.codec.payloadType == pt(97))
        #expect(camera.codec.rtxPayloadType == pt(98))
        #expect(camera.codec.feedback.map { $0.parameter ?? "" } == ["", "pli", ""])
        #expect(camera.primarySSRC == SSRC(346592887))
        #expect(camera.rtxSSRC == SSRC(1273583823))
        #expect(camera.extensions.mid == 1)
        #expect(camera.extensions.absSendTime == 3)
        #expect(analysis.slots.map(\.mid) == ["2", "3"])
        #expect(analysis.sections.map(\.role) == [.audio, .camera, .slot, .slot])
        #expect(throws: SDPOfferError.tooManyVideoSlots(offered: 2, allowed: 1)) {
            try Fixture.aiortcAV.analysis(videoSlots: 1)
        }
    }

    @Test func aiortcAudioOnly() throws {
        let analysis = try Fixture.aiortcAudioOnly.analysis(videoSlots: 0)
        #expect(analysis.iceUfrag == "p2t6")
        #expect(analysis.fingerprints.count == 3)
        #expect(analysis.audio.opusPayloadType == pt(96))
        #expect(analysis.remoteAudioSSRC == SSRC(2534237084))
    }

    /// With one slot, every fixture that receives more than one video section is refused.
    @Test(arguments: Fixture.allCases)
    func slotLimitOfOne(_ fixture: Fixture) throws {
        let slots = try fixture.analysis().slots.count
        if slots > 1 {
            #expect(throws: SDPOfferError.tooManyVideoSlots(offered: slots, allowed: 1)) {
                try fixture.analysis(videoSlots: 1)
            }
        } else {
            #expect(try fixture.analysis(videoSlots: 1).slots.count == slots)
        }
    }

    @Test(arguments: Fixture.allCases)
    func lineFeedOffersAnalyseTheSame(_ fixture: Fixture) throws {
        let lf = try fixture.text.replacingOccurrences(of: "\r\n", with: "\n")
        #expect(try OfferAnalysis(offer: SessionDescription(parsing: lf), videoSlots: 9) == fixture.analysis())
    }
}
