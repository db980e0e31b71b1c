import ChorusCore
import DTLS
import ICELite
import SDP

/// An SDP offer as `Room.join` handles one: parse (from the request's `String`, and from bytes),
/// read every typed attribute, check it against the room's shape (`OfferAnalysis`), and for an
/// accepted offer derive what the join derives (ICE credentials, DTLS fingerprints and role)
/// and build the answer. The answer goes to the peer, so it must always build with valid local
/// parameters and parse back with our own parser, with one section per offered m= line.
public func exerciseSDP(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    exerciseOffer(parse: { () throws(SDPOfferError) in try SessionDescription(parsing: text) })
    exerciseOffer(parse: { () throws(SDPOfferError) in try SessionDescription(parsing: bytes) })
    // A tight size limit must refuse, not trap or truncate.
    consume(try? SessionDescription(parsing: bytes, maximumBytes: bytes.count / 2))
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
    // The join refuses credentials that ICECredentials rejects and offers without a DTLS hash it
    // knows; both are errors, not traps.
    consume(try? ICECredentials(ufrag: analysis.iceUfrag, password: analysis.icePwd))
    let fingerprints = analysis.supportedFingerprints.compactMap { fingerprint in
        DTLSFingerprint.Algorithm(rawValue: fingerprint.hashFunction)
            .map { DTLSFingerprint(algorithm: $0, digest: fingerprint.digest) }
    }
    consume(fingerprints)
    var clockRates: [UInt8: UInt64] = [analysis.audio.opusPayloadType.rawValue: 48_000]
    if let camera = analysis.camera {
        clockRates[camera.codec.payloadType.rawValue] = UInt64(camera.codec.clockRate)
        if let rtx = camera.codec.rtxPayloadType { clockRates[rtx.rawValue] = UInt64(camera.codec.clockRate) }
    }
    consume(clockRates)

    let slots = analysis.slots.enumerated().map { index, slot in
        OutgoingStream(ssrc: SSRC(UInt32(1000 + 2 * index)),
                       rtxSSRC: slot.codec.rtxPayloadType == nil ? nil : SSRC(UInt32(1001 + 2 * index)),
                       streamID: "chorus-slot\(index)", trackID: "slot\(index)")
    }
    let local = LocalParameters(
        sessionID: 4_611_686_018_427_387_904, iceUfrag: FuzzICE.server.ufrag, icePwd: FuzzICE.server.password,
        fingerprint: FuzzSDP.fingerprint, candidateAddress: "203.0.113.7", candidatePort: 40_000,
        cname: "chorus-fuzz", audioStream: OutgoingStream(ssrc: SSRC(777), streamID: "chorus", trackID: "mix"),
        slotStreams: slots)
    let answerText: String
    do {
        answerText = try AnswerBuilder(analysis: analysis, local: local).buildText()
    } catch {
        fatalError("fuzz invariant failed: an accepted offer has no answer: \(error)")
    }
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
}

enum FuzzSDP {
    static let fingerprint = CertificateFingerprint(hashFunction: "sha-256", digest: Array(0..<32))
}
