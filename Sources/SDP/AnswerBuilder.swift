import ChorusCore

/// Writes the server's SDP answer to an accepted offer (JSEP, RFC 8829 §5.3, for an ICE-lite
/// DTLS-SRTP server): same m= lines in the same order with the same mids, directions mirrored,
/// one codec per section, the offer's header extension IDs, and the server's streams announced
/// with `a=ssrc`/`a=msid`.
///
/// Transport layout: every accepted section is in one `a=group:BUNDLE` (offer order) and carries
/// the same port and `c=` address, since bundled sections share one 5-tuple; each repeats the
/// ICE credentials, fingerprint and setup (as browsers' own answers do, and every stack accepts),
/// and the session level carries them too, for stacks that check rejected sections. The host
/// candidate and `a=end-of-candidates` are repeated in every accepted section too: aiortc
/// takes the remote candidates of a bundled transport from the last section it reads, and
/// browsers ignore the copies (as Janus and mediasoup answer). Rejected sections
/// get port 0, the offer's first format and their mid, and stay out of BUNDLE.
///
/// Driven once per join: `AnswerBuilder(analysis:local:).build()` returns the description, and
/// its `text` is the CRLF answer. Pure: no randomness (the caller supplies IDs and SSRCs).
public struct AnswerBuilder: Sendable {
    public var analysis: OfferAnalysis
    public var local: LocalParameters

    /// Answer opus parameters: 10 ms minimum packets, in-band FEC wanted on receive, and
    /// discontinuous transmission (RFC 7587 §6.1: a receiver preference the sender's encoder
    /// follows, as browsers do). With `usedtx=1` a silent participant sends a comfort-noise
    /// update every 400 ms instead of 50 packets a second, which in a meeting, where most
    /// are silent most of the time, removes most of the room's inbound packets; the jitter
    /// buffer knows DTX gaps from loss and plays a mixed speaker's pauses as comfort noise.
    public static let opusParameters = "minptime=10;useinbandfec=1;usedtx=1"
    /// Priority of the single host candidate: type preference 126, local preference 65535,
    /// component 1 (RFC 8445 §5.1.2.1).
    public static let candidatePriority: UInt32 = 2_130_706_431
    /// The passive TCP host candidate's priority (RFC 8445 §5.1.2.1 with RFC 6544 §4.2): host
    /// type preference 126, local preference 2^13 × 4 (passive) + 8191, component 1. Below the
    /// UDP candidate's, so a client uses TCP only when UDP fails.
    public static let tcpCandidatePriority: UInt32 = 126 << 24 | (4 << 13 | 8_191) << 8 | 255

    public init(analysis: OfferAnalysis, local: LocalParameters) {
        self.analysis = analysis
        self.local = local
    }

    /// The answer as a description; throws when a local parameter cannot be written.
    public func build() throws(AnswerError) -> SessionDescription {
        try local.validate()
        guard local.slotStreams.count == analysis.slots.count else {
            throw .slotStreamCount(expected: analysis.slots.count, provided: local.slotStreams.count)
        }
        var media: [MediaDescription] = []
        for plan in analysis.sections {
            media.append(try section(for: plan))
        }
        // The transport attributes are also written at session level, where every section
        // inherits them: aiortc refuses an answer in which any m= section, rejected ones
        // included, lacks ICE credentials or a DTLS role, and RFC 8866 lets media level override.
        var attributes: [Attribute] = [.iceLite] + transportAttributes(inMediaSection: false)
        attributes.append(.group(Group(semantics: Group.bundle, identificationTags: analysis.bundleMids)))
        if analysis.sessionExtmapAllowMixed { attributes.append(.extmapAllowMixed) }
        attributes.append(.other(name: "msid-semantic", value: "WMS *"))
        let origin = Origin(username: "-", sessionID: String(local.sessionID),
                            sessionVersion: String(local.sessionVersion))
        return SessionDescription(origin: origin, attributes: attributes, media: media)
    }

    /// The answer as SDP text with CRLF line endings.
    public func buildText() throws(AnswerError) -> String {
        try build().text
    }

    private func section(for plan: SectionPlan) throws(AnswerError) -> MediaDescription {
        switch plan.role {
        case .rejected:
            return rejectedSection(plan)
        case .audio:
            return audioSection(analysis.audio, proto: plan.proto)
        case .camera:
            // The camera is only received; the plan's index always has the camera's section.
            guard let camera = analysis.camera else { return rejectedSection(plan) }
            return videoSection(camera.video, stream: nil, proto: plan.proto)
        case .slot, .cameraAndSlot:
            guard let slotIndex = analysis.slotIndex(ofMLine: plan.mLineIndex),
                  local.slotStreams.indices.contains(slotIndex)
            else { return rejectedSection(plan) }
            let video = analysis.slots[slotIndex]
            let stream = local.slotStreams[slotIndex]
            if video.codec.rtxPayloadType != nil, stream.rtxSSRC == nil { throw .missingRTXSSRC(mid: video.mid) }
            return videoSection(video, stream: stream, proto: plan.proto)
        }
    }

    /// RFC 3264 §6 / RFC 8843 §7.3.2: port 0, a format from the offer, the mid kept so the
    /// offerer can match it; no other attributes.
    private func rejectedSection(_ plan: SectionPlan) -> MediaDescription {
        MediaDescription(media: plan.media, port: 0, proto: plan.proto, formats: [plan.firstFormat],
                         connection: ConnectionData(addressType: "IP4", address: "0.0.0.0"),
                         attributes: plan.mid.map { [.mid($0)] } ?? [])
    }

    /// Where every accepted section says the shared transport is.
    var connection: ConnectionData {
        ConnectionData(addressType: local.isIPv6 ? "IP6" : "IP4", address: local.candidateAddress)
    }

    /// For each of the server's addresses in order, its UDP host candidate, then its passive TCP
    /// one when ICE-TCP is on. Each address gets a lower local preference than the one before,
    /// so the priorities stay distinct and the first address is preferred.
    var hostCandidates: [Candidate] {
        var candidates: [Candidate] = []
        for (index, address) in ([local.candidateAddress] + local.additionalCandidateAddresses).enumerated() {
            let lower = UInt32(index) << 8
            candidates.append(Candidate(foundation: "\(2 * index + 1)", component: 1, transport: "udp",
                                        priority: Self.candidatePriority - lower, address: address,
                                        port: local.candidatePort, type: "host"))
            if let tcpPort = local.candidateTCPPort {
                candidates.append(Candidate(foundation: "\(2 * index + 2)", component: 1, transport: "tcp",
                                            priority: Self.tcpCandidatePriority - lower, address: address, port: tcpPort,
                                            type: "host", extensionFields: ["tcptype", "passive"]))
            }
        }
        return candidates
    }

    /// ICE credentials, fingerprint and DTLS role, and in a media section (every accepted one)
    /// the candidate.
    func transportAttributes(inMediaSection: Bool) -> [Attribute] {
        var attributes: [Attribute] = inMediaSection ? hostCandidates.map { .candidate($0) } + [.endOfCandidates] : []
        attributes += [.iceUfrag(local.iceUfrag), .icePwd(local.icePwd), .fingerprint(local.fingerprint),
                       .setup(analysis.localSetup)]
        return attributes
    }
}
