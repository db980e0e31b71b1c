/// The transport half of the offer check: the BUNDLE group (RFC 8843) and the parameters of
/// the one bundled transport — ICE credentials (RFC 8839), DTLS fingerprints (RFC 8122) and
/// the DTLS role (RFC 5763 §5).
extension OfferAnalysis {
    /// The BUNDLE group the answer accepts, as `bundle(offer:plans:)` found it.
    struct Bundle {
        /// Accepted mids, in offer order.
        var mids: [String]
        /// m= line index of the BUNDLE-tag section: the first accepted mid the group lists.
        var tagIndex: Int
    }

    /// The peer's side of the one bundled transport, as `transport(offer:tagSection:)` read it.
    struct Transport {
        var ufrag: String
        var pwd: String
        var options: [String]
        var fingerprints: [CertificateFingerprint]
        var remoteSetup: Setup
        var localSetup: Setup
    }

    /// The BUNDLE group that lists every accepted section. Sections the answer rejects anyway
    /// (a data channel, say) need not be in it: they never use the transport.
    static func bundle(offer: SessionDescription, plans: [SectionPlan]) throws(SDPOfferError) -> Bundle {
        let accepted = plans.filter { !$0.isRejected }
        let acceptedMids = accepted.compactMap(\.mid)
        let groups = offer.bundleGroups
        guard !groups.isEmpty else { throw .noBundle(detail: "the offer has no a=group:BUNDLE") }
        guard let group = groups.first(where: { Set($0.identificationTags).isSuperset(of: acceptedMids) }) else {
            throw .noBundle(detail: "no a=group:BUNDLE lists every audio and video m-line")
        }
        let offeredMids = Set(offer.media.compactMap(\.mid))
        for tag in group.identificationTags where !offeredMids.contains(tag) {
            throw .noBundle(detail: "a=group:BUNDLE names mid \(tag), which no m-line has")
        }
        let indexByMid = Dictionary(accepted.compactMap { plan in plan.mid.map { ($0, plan.mLineIndex) } },
                                    uniquingKeysWith: { first, _ in first })
        // Accepted sections always include the audio one, so the group names at least one.
        guard let tagIndex = group.identificationTags.lazy.compactMap({ indexByMid[$0] }).first else {
            throw .noBundle(detail: "a=group:BUNDLE lists no accepted m-line")
        }
        return Bundle(mids: acceptedMids, tagIndex: tagIndex)
    }

    /// The bundled transport's parameters: the BUNDLE-tag section's, else the session level's.
    static func transport(offer: SessionDescription, tagSection: MediaDescription) throws(SDPOfferError)
        -> Transport
    {
        guard let ufrag = tagSection.iceUfrag ?? offer.iceUfrag,
              let pwd = tagSection.icePwd ?? offer.icePwd
        else { throw .noIceCredentials }
        guard isICEChars(ufrag, count: 4...256), isICEChars(pwd, count: 22...256) else {
            throw .invalidIceCredentials
        }
        let fingerprints = tagSection.fingerprints.isEmpty ? offer.fingerprints : tagSection.fingerprints
        guard !fingerprints.isEmpty else { throw .noFingerprint }
        guard fingerprints.contains(where: \.isSupported) else {
            throw .unsupportedFingerprint(hashFunctions: fingerprints.map(\.hashFunction))
        }
        let remoteSetup = tagSection.setup ?? offer.setup ?? .active
        guard let localSetup = remoteSetup.answerRole else { throw .unsupportedSetup(remoteSetup) }
        return Transport(ufrag: ufrag, pwd: pwd, options: tagSection.iceOptions ?? offer.iceOptions,
                         fingerprints: fingerprints, remoteSetup: remoteSetup, localSetup: localSetup)
    }

    /// RFC 8839 §5.4: `ice-char = ALPHA / DIGIT / "+" / "/"`, within the length range. The
    /// credentials end up in STUN USERNAME and as the HMAC key, so nothing else may pass.
    static func isICEChars(_ text: String, count range: ClosedRange<Int>) -> Bool {
        range.contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            switch byte {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, UInt8(ascii: "+"), UInt8(ascii: "/"): return true
            default: return false
            }
        }
    }
}
