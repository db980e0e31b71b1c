import ChorusCore

/// A participant's offer checked against Chorus's shape rules, with everything the media path
/// needs pulled out: remote ICE credentials, DTLS fingerprints and role, the audio section, the
/// camera section, the video slot sections and which sections the answer rejects.
///
/// Shape rules: exactly one audio m= line offering Opus; at most one video m= line on which the
/// client sends (its camera); every video m= line on which it receives is a video slot, and there
/// may be at most `videoSlots` of them; every accepted m= line is in one `a=group:BUNDLE` and has
/// `a=rtcp-mux`; the bundled transport has ICE credentials and a usable fingerprint.
///
/// Driven once per join: `OfferAnalysis(offer:videoSlots:)` throws the first broken rule as an
/// `SDPOfferError`; on success hand the value to `AnswerBuilder`. A pure value: no I/O, no clock.
public struct OfferAnalysis: Sendable, Hashable {
    /// The offerer's ICE username fragment, checked against RFC 8839 §5.4.
    public var iceUfrag: String
    /// The offerer's ICE password, checked against RFC 8839 §5.4.
    public var icePwd: String
    /// `a=ice-options` of the bundled transport (`trickle`, …).
    public var iceOptions: [String]
    /// Every fingerprint of the bundled transport, in offer order, including hash functions
    /// the DTLS layer cannot check; `supportedFingerprints` filters those out.
    public var fingerprints: [CertificateFingerprint]
    /// The offerer's `a=setup` (`active` when absent: the RFC 4145 §4 default).
    public var remoteSetup: Setup
    /// The DTLS role the answer takes: `passive` for `actpass`/`active`, `active` for `passive`.
    public var localSetup: Setup
    /// The mids of the accepted sections, in offer order; the answer's BUNDLE group.
    public var bundleMids: [String]
    /// One plan per offered m= line, in offer order.
    public var sections: [SectionPlan]
    /// The one audio section: the microphone up (unless `recvonly`), the room's mix down.
    public var audio: AudioSection
    /// The section on which the offerer sends its camera, if any.
    public var camera: CameraSection?
    /// The sections on which the offerer receives video, in offer order. A `sendrecv` camera
    /// section is listed here too, at its offer position.
    public var slots: [VideoSection]
    /// `a=extmap-allow-mixed` at session level (Chrome); Firefox writes it per m= section.
    public var sessionExtmapAllowMixed: Bool

    /// Audio and video protos Chorus accepts: DTLS-SRTP with RTCP feedback (RFC 5764 §8).
    public static let supportedProto = "UDP/TLS/RTP/SAVPF"

    /// Checks `offer` and extracts the negotiation; `videoSlots` is the room's slot count.
    public init(offer: SessionDescription, videoSlots: Int) throws(SDPOfferError) {
        let plans = try Self.plans(for: offer)
        try Self.checkShape(plans, videoSlots: videoSlots)
        try Self.checkMids(plans)
        let bundle = try Self.bundle(offer: offer, plans: plans)
        for plan in plans where !plan.isRejected && !offer.media[plan.mLineIndex].hasRTCPMux {
            throw .noRtcpMux(mid: plan.mid ?? "#\(plan.mLineIndex)")
        }
        let transport = try Self.transport(offer: offer, tagSection: offer.media[bundle.tagIndex])
        iceUfrag = transport.ufrag
        icePwd = transport.pwd
        iceOptions = transport.options
        fingerprints = transport.fingerprints
        remoteSetup = transport.remoteSetup
        localSetup = transport.localSetup
        bundleMids = bundle.mids
        sections = plans
        sessionExtmapAllowMixed = offer.hasExtmapAllowMixed
        (audio, camera, slots) = try Self.negotiateMedia(offer: offer, plans: plans)
    }

    /// The offerer's microphone SSRC, when it sends audio and announced one.
    public var remoteAudioSSRC: SSRC? { audio.ssrc }

    /// The fingerprints whose hash function the DTLS layer can verify.
    public var supportedFingerprints: [CertificateFingerprint] { fingerprints.filter(\.isSupported) }

    /// The sections the answer rejects with port 0.
    public var rejectedSections: [SectionPlan] { sections.filter(\.isRejected) }

    /// The slot index (position in `slots`) of the section at `mLineIndex`, or nil.
    public func slotIndex(ofMLine mLineIndex: Int) -> Int? {
        slots.firstIndex { $0.mLineIndex == mLineIndex }
    }
}

/// The shape half of the offer check: each section's role, the counts, and the mids.
extension OfferAnalysis {
    /// One plan per m= line: its role by media type, use and direction.
    static func plans(for offer: SessionDescription) throws(SDPOfferError) -> [SectionPlan] {
        var plans: [SectionPlan] = []
        for (index, section) in offer.media.enumerated() {
            let role: SectionPlan.Role
            if !section.isInUse {
                role = .rejected(.disabledByOfferer)
            } else if section.media == "audio" || section.media == "video" {
                guard section.proto == supportedProto else {
                    throw .unsupportedProtocol(mid: section.mid ?? "#\(index)", proto: section.proto)
                }
                role = section.media == "audio" ? .audio : videoRole(offer.direction(of: section))
            } else {
                role = .rejected(.unsupportedMedia)
            }
            plans.append(SectionPlan(mLineIndex: index, media: section.media, proto: section.proto,
                                     mid: section.mid, firstFormat: section.formats.first ?? "0", role: role))
        }
        return plans
    }

    private static func videoRole(_ direction: Direction) -> SectionPlan.Role {
        switch direction {
        case .sendonly: return .camera
        case .recvonly: return .slot
        case .sendrecv: return .cameraAndSlot
        case .inactive: return .rejected(.inactive)
        }
    }

    /// One audio section; at most one camera; no more slots than the room has.
    static func checkShape(_ plans: [SectionPlan], videoSlots: Int) throws(SDPOfferError) {
        let audioCount = plans.count { $0.role == .audio }
        guard audioCount > 0 else { throw .noAudio }
        guard audioCount == 1 else { throw .multipleAudio(count: audioCount) }
        let senders = plans.count { $0.role == .camera || $0.role == .cameraAndSlot }
        guard senders <= 1 else { throw .multipleVideoSenders(count: senders) }
        let slotCount = plans.count { $0.role == .slot || $0.role == .cameraAndSlot }
        let allowed = max(videoSlots, 0)
        guard slotCount <= allowed else { throw .tooManyVideoSlots(offered: slotCount, allowed: allowed) }
    }

    /// Every accepted section has a mid, and no mid appears twice.
    static func checkMids(_ plans: [SectionPlan]) throws(SDPOfferError) {
        var seen = Set<String>()
        for plan in plans {
            guard let mid = plan.mid else {
                if plan.isRejected { continue }
                throw .noMid(mLineIndex: plan.mLineIndex)
            }
            guard seen.insert(mid).inserted else { throw .duplicateMid(mid) }
        }
    }
}
