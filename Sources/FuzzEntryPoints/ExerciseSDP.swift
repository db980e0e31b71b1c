import ChorusCore
import DTLS
import ICELite
import RTCP
import Rooms
import SDP

/// An SDP offer as `Room.join` handles one: parse (from the request's `String`, and from bytes),
/// read every typed attribute, check it against the room's shape (`OfferAnalysis`), and for an
/// accepted offer derive what the join derives (ICE credentials, DTLS fingerprints and role)
/// and build the answer (with a simulcast camera's layers mirrored). The answer goes to the peer, so it must always build with valid local
/// parameters and parse back with our own parser, with one section per offered m= line.
public func exerciseSDP(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    exerciseOffer(parse: { () throws(SDPOfferError) in try SessionDescription(parsing: text) })
    exerciseOffer(parse: { () throws(SDPOfferError) in try SessionDescription(parsing: bytes) })
    // A tight size limit must refuse, not trap or truncate.
    consume(try? SessionDescription(parsing: bytes, maximumBytes: bytes.count / 2))
    // The same text as a WHIP PATCH fragment (RFC 8840): parsed, every candidate read back.
    if let fragment = try? TrickleICEFragment(parsing: text) {
        for candidate in fragment.candidates { consume((candidate.value, candidate.tcpType)) }
        consume((fragment.iceUfrag, fragment.icePwd, fragment.mids))
    }
}

func exerciseOffer(parse: () throws(SDPOfferError) -> SessionDescription) {
    let offer: SessionDescription
    do {
        offer = try parse()
    } catch {
        consume((error.code, error.message, error.description))
        return
    }
    exerciseDescription(offer)
    // What we print, we parse (the text is not sent anywhere, but the answer path relies on it).
    consume(try? SessionDescription(parsing: offer.text))
    for slots in [0, 1, 25] {
        let analysis: OfferAnalysis
        do {
            analysis = try OfferAnalysis(offer: offer, videoSlots: slots)
        } catch {
            consume((error.code, error.message, error.description))
            continue
        }
        exerciseAnswer(offer: offer, analysis: analysis)
    }
}

func exerciseDescription(_ offer: SessionDescription) {
    consume((offer.origin, offer.sessionName, offer.connection, offer.timing, offer.attributes.count))
    consume((offer.bundleGroups, offer.isICELite, offer.direction, offer.setup, offer.iceUfrag, offer.icePwd,
             offer.iceOptions, offer.fingerprints.map(\.value), offer.hasExtmapAllowMixed))
    for section in offer.media {
        consume((section.isRTP, section.payloadTypes, section.mediaLineValue, section.lines, section.mid,
                 section.direction, offer.direction(of: section), section.setup, section.iceUfrag, section.icePwd,
                 section.iceOptions))
        consume((section.mediaStreamID, section.simulcast, section.isBundleOnly, section.hasRTCPMux,
                 section.hasRTCPReducedSize, section.hasExtmapAllowMixed, section.hasEndOfCandidates, section.isInUse))
        consume((section.rtpMaps, section.formatParameters, section.rtcpFeedback, section.extensionMaps,
                 section.fingerprints.map(\.hexDigest), section.candidates, section.ssrcAttributes, section.ssrcGroups,
                 section.rids, section.ssrcs))
    }
}

/// What `MediaPlan` derives from an accepted offer, then the answer.
func exerciseAnswer(offer: SessionDescription, analysis: OfferAnalysis) {
    consume((analysis.remoteAudioSSRC, analysis.supportedFingerprints, analysis.rejectedSections,
             analysis.camera?.isAlsoSlot, analysis.camera?.primarySSRC, analysis.audio.answerDirection))
    for index in offer.media.indices { consume(analysis.slotIndex(ofMLine: index)) }
    // The join's own derivation (credentials, fingerprints, SSRCs, clock rates, the answer):
    // refusals are errors, never traps.
    let plan: MediaPlan
    do {
        plan = try MediaPlan(
            analysis: analysis, certificateFingerprint: FuzzSDP.fingerprint.digest, candidateAddress: "203.0.113.7",
            candidatePort: 40_000, callId: FuzzSDP.callId, ntpReference: FuzzSDP.ntpReference, localICE: FuzzICE.server,
            seed: 7)
    } catch {
        switch error {
        case .offerRejected(let code, _): consume(code)
        default: fatalError("fuzz invariant failed: an accepted offer has no plan: \(error)")
        }
        return
    }
    consume((plan.transport.clockRates, plan.transport.remoteFingerprints, plan.slotStreams.count))
    let answerText = plan.answer
    let answer: SessionDescription
    do {
        answer = try SessionDescription(parsing: answerText)
    } catch {
        fatalError("fuzz invariant failed: our answer does not parse (\(error)):\n\(answerText)")
    }
    fuzzRequire(answer.media.count == offer.media.count, "the answer has \(answer.media.count) sections for "
                + "\(offer.media.count) offered")
    fuzzRequire(answer.media.map(\.mid) == offer.media.map(\.mid), "the answer's mids differ from the offer's")
    fuzzRequire(answer.bundleGroups.first?.identificationTags == analysis.bundleMids, "the answer's BUNDLE differs")
    if let camera = analysis.camera, answer.media.indices.contains(camera.video.mLineIndex) {
        exerciseSimulcastAnswer(camera, answered: answer.media[camera.video.mLineIndex])
    }
}

/// A simulcast camera: at most three layers, a RID extension to tell them apart, and the
/// answer's `a=simulcast:recv` naming exactly the layers, in order.
func exerciseSimulcastAnswer(_ camera: CameraSection, answered: MediaDescription) {
    consume((camera.simulcastLayers, camera.rtpStreamIDExtension, camera.repairedRTPStreamIDExtension))
    fuzzRequire(camera.simulcastLayers.count <= OfferAnalysis.maximumSimulcastLayers, "more simulcast layers than allowed")
    fuzzRequire(!camera.isSimulcast || camera.rtpStreamIDExtension != nil, "simulcast without the RID extension")
    let received = answered.simulcast?.receive.map { $0.map(\.rid) } ?? []
    fuzzRequire(received == camera.simulcastLayers.map { [$0.rid] }, "the answer's a=simulcast differs from the layers")
    fuzzRequire(answered.rids.map(\.id) == camera.simulcastLayers.map(\.rid), "the answer's a=rid lines differ")
}

enum FuzzSDP {
    static let fingerprint = CertificateFingerprint(hashFunction: "sha-256", digest: Array(0..<32))
    static let callId = CallID(guid: "8f0c4c52-3a1e-4b7e-9d7e-2f6a1c0b9e11")
    static let ntpReference = NTPClockReference(mediaTime: .seconds(100), ntp: NTPTimestamp(seconds: 3_900_000_000, fraction: 0))
}
