import ChorusCore
import DTLS
import ICELite

/// The offer a simulated participant sends (shaped like a browser's: BUNDLE, rtcp-mux, Opus
/// with in-band FEC and the RFC 6464 level extension, one host candidate; with video, a
/// send-only VP8 camera and `slots` receive-only video m-lines) and what it needs from the answer.
/// With `transportCC`, every section maps the transport-wide sequence number (ID 3, as Chromium)
/// and asks for `transport-cc` feedback, and the video sections offer RTX (the server's probes
/// are RTX padding); with simulcast RIDs, the camera is offered as Chromium offers it (RID
/// extension ID 10, `a=rid:<id> send` per layer, `a=simulcast:send q;h;f`, no `a=ssrc`).
enum LoadSDP {
    static let opusPayloadType: UInt8 = 111
    static let vp8PayloadType: UInt8 = 96
    static let rtxPayloadType: UInt8 = 97
    static let audioLevelExtensionID: UInt8 = 1
    static let transportWideCCExtensionID: UInt8 = 3
    static let rtpStreamIDExtensionID: UInt8 = 10
    static let transportWideCCURI = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"
    static let rtpStreamIDURI = "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"

    /// The media of one offer: the audio SSRC (none for a video-only publisher connection),
    /// and the camera's SSRC and slot count with video.
    struct Media {
        var audioSSRC: UInt32?
        var videoSSRC: UInt32?
        var slots = 0
        /// The camera's simulcast RIDs in layer order (lowest first); empty: one stream.
        var simulcastRIDs: [String] = []
        /// Offer transport-wide congestion control (the sequence number and its feedback).
        var transportCC = false
        /// Offer an active ICE-TCP candidate (RFC 6544) instead of the UDP one.
        var tcp = false
    }

    static func offer(ice: ICECredentials, fingerprint: String, host: String = "127.0.0.1", port: Int,
                      media: Media) -> String {
        let transport = transportLines(ice: ice, fingerprint: fingerprint, host: host, port: port, setup: "actpass",
                                       tcp: media.tcp)
        let twcc = media.transportCC ? ["a=extmap:\(transportWideCCExtensionID) \(transportWideCCURI)"] : []
        let audioSection = media.audioSSRC.map { ssrc in
            ["m=audio \(port) UDP/TLS/RTP/SAVPF \(opusPayloadType)"] + transport + [
                "a=mid:0",
                "a=extmap:\(audioLevelExtensionID) urn:ietf:params:rtp-hdrext:ssrc-audio-level",
            ] + twcc + [
                "a=sendrecv",
                "a=msid:load audio",
                "a=rtcp-mux",
                "a=rtpmap:\(opusPayloadType) opus/48000/2",
                "a=fmtp:\(opusPayloadType) minptime=10;useinbandfec=1",
            ] + (media.transportCC ? ["a=rtcp-fb:\(opusPayloadType) transport-cc"] : []) + [
                "a=ssrc:\(ssrc) cname:load",
            ]
        } ?? []
        let first = audioSection.isEmpty ? 0 : 1
        let rids = media.simulcastRIDs
        let camera = rids.isEmpty
            ? media.videoSSRC.map { ["a=ssrc:\($0) cname:load"] } ?? []
            : ["a=extmap:\(rtpStreamIDExtensionID) \(rtpStreamIDURI)"] + rids.map { "a=rid:\($0) send" }
                + ["a=simulcast:send \(rids.joined(separator: ";"))"]
        let videoSections = media.videoSSRC.map { _ in
            videoSection(mid: first, direction: "sendonly", port: port, transport: transport, transportCC: media.transportCC)
                + ["a=msid:load camera"] + camera
                + (0..<media.slots).flatMap {
                    videoSection(mid: first + 1 + $0, direction: "recvonly", port: port, transport: transport,
                                 transportCC: media.transportCC)
                }
        } ?? []
        let sections = first + (media.videoSSRC == nil ? 0 : 1 + media.slots)
        let lines = [
            "v=0",
            "o=- \(UInt64.random(in: 1...UInt64(Int64.max))) 2 IN IP4 \(host)",
            "s=-",
            "t=0 0",
            "a=group:BUNDLE \((0..<sections).map(String.init).joined(separator: " "))",
            "a=msid-semantic: WMS load",
        ] + audioSection + videoSections
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// Our answer to a server's offer (a Janus VideoRoom subscriber connection): every video
    /// section that offers VP8 is accepted receive-only with that payload type; any other
    /// section is rejected (port 0). We take the DTLS client role (`setup:active`).
    static func answer(toOffer offer: String, ice: ICECredentials, fingerprint: String, host: String, port: Int)
        -> (sdp: String, videoPayloadType: UInt8?)
    {
        var sections: [[String]] = []
        for raw in offer.split(whereSeparator: \.isNewline) {
            let line = String(raw)
            if line.hasPrefix("m=") { sections.append([line]) } else if !sections.isEmpty { sections[sections.count - 1].append(line) }
        }
        var accepted: [String] = []
        var body: [String] = []
        var payloadType: UInt8?
        for section in sections {
            let media = section[0].dropFirst(2).split(separator: " ")
            let mid = section.first { $0.hasPrefix("a=mid:") }.map { String($0.dropFirst(6)) } ?? "\(accepted.count)"
            let vp8 = section.lazy.compactMap { line -> UInt8? in
                guard line.hasPrefix("a=rtpmap:"), line.uppercased().contains(" VP8/90000") else { return nil }
                return UInt8(line.dropFirst(9).prefix { $0 != " " })
            }.first
            guard media.first == "video", media.count >= 3, let vp8 else {
                body += ["m=\(media.first ?? "application") 0 \(media.count > 2 ? media[2] : "UDP/TLS/RTP/SAVPF") 0",
                         "c=IN IP4 0.0.0.0", "a=mid:\(mid)", "a=inactive"]
                continue
            }
            payloadType = payloadType ?? vp8
            accepted.append(mid)
            body += ["m=video \(port) \(media[2]) \(vp8)"]
                + transportLines(ice: ice, fingerprint: fingerprint, host: host, port: port, setup: "active")
                + ["a=mid:\(mid)", "a=recvonly", "a=rtcp-mux",
                   "a=rtpmap:\(vp8) VP8/90000", "a=rtcp-fb:\(vp8) nack", "a=rtcp-fb:\(vp8) nack pli"]
        }
        let head = ["v=0", "o=- \(UInt64.random(in: 1...UInt64(Int64.max))) 2 IN IP4 \(host)", "s=-", "t=0 0",
                    "a=group:BUNDLE \(accepted.joined(separator: " "))", "a=msid-semantic: WMS load"]
        return ((head + body).joined(separator: "\r\n") + "\r\n", payloadType)
    }

    /// What every section of ours repeats: the one host candidate, ICE credentials, the
    /// certificate fingerprint and the DTLS role.
    private static func transportLines(ice: ICECredentials, fingerprint: String, host: String, port: Int,
                                       setup: String, tcp: Bool = false) -> [String] {
        [
            "c=IN IP4 \(host)",
            "a=rtcp:9 IN IP4 0.0.0.0",
            tcp ? "a=candidate:1 1 tcp 1518280447 \(host) \(port) typ host tcptype active"
                : "a=candidate:1 1 udp 2130706431 \(host) \(port) typ host",
            "a=end-of-candidates",
            "a=ice-ufrag:\(ice.ufrag)",
            "a=ice-pwd:\(ice.password)",
            "a=fingerprint:\(fingerprint)",
            "a=setup:\(setup)",
        ]
    }

    /// One VP8 m-line. Without transport-cc no RTX: a loopback run loses nearly nothing, and
    /// plain retransmissions count as duplicates rather than as a second stream. With it, RTX
    /// (as browsers offer it), since the server probes a transport-cc link with RTX padding;
    /// the generator never asks for retransmissions, so RTX brings it only those probes.
    private static func videoSection(mid: Int, direction: String, port: Int, transport: [String],
                                     transportCC: Bool) -> [String] {
        let types = transportCC ? "\(vp8PayloadType) \(rtxPayloadType)" : "\(vp8PayloadType)"
        return ["m=video \(port) UDP/TLS/RTP/SAVPF \(types)"] + transport + [
            "a=mid:\(mid)",
        ] + (transportCC ? ["a=extmap:\(transportWideCCExtensionID) \(transportWideCCURI)"] : []) + [
            "a=\(direction)",
            "a=rtcp-mux",
            "a=rtpmap:\(vp8PayloadType) VP8/90000",
            "a=rtcp-fb:\(vp8PayloadType) nack",
            "a=rtcp-fb:\(vp8PayloadType) nack pli",
            "a=rtcp-fb:\(vp8PayloadType) ccm fir",
            "a=rtcp-fb:\(vp8PayloadType) goog-remb",
        ] + (transportCC ? ["a=rtcp-fb:\(vp8PayloadType) transport-cc", "a=rtpmap:\(rtxPayloadType) rtx/90000", "a=fmtp:\(rtxPayloadType) apt=\(vp8PayloadType)"] : [])
    }

    /// What the client needs from the server's answer.
    struct Answer: Equatable {
        var ice: ICECredentials
        var host: String
        var port: Int
        var fingerprint: DTLSFingerprint
        /// DTLS role the answer took: `passive` makes us the client.
        var serverIsPassive: Bool
        /// The server asks for Opus DTX (`usedtx=1`, RFC 7587 §6.1), which browsers follow.
        var usesDTX = false
        /// The port of the server's passive ICE-TCP candidate (RFC 6544) on the same host, if any.
        var tcpPort: Int?
        /// The answer kept transport-wide congestion control (the sequence number's extmap).
        var transportCC = false
        /// The answer accepted the camera's simulcast (`a=simulcast:recv`).
        var simulcast = false
    }

    enum AnswerError: Error, CustomStringConvertible {
        case missing(String)
        var description: String {
            switch self {
            case .missing(let what): return "the answer has no usable \(what)"
            }
        }
    }

    /// Reads the transport from an answer, or from a server's offer (the first values win:
    /// every section repeats them).
    static func parseAnswer(_ sdp: String) throws(AnswerError) -> Answer {
        var ufrag: String?, pwd: String?, candidate: (String, Int)?, fingerprint: DTLSFingerprint?, setup: String?
        var usesDTX = false, tcpPort: Int?, transportCC = false, simulcast = false
        for raw in sdp.split(whereSeparator: \.isNewline) {
            let line = String(raw)
            if line.hasPrefix("a=extmap:"), line.hasSuffix(" " + transportWideCCURI) { transportCC = true }
            if line.hasPrefix("a=simulcast:recv ") { simulcast = true }
            if line.hasPrefix("a=fmtp:"), line.split(whereSeparator: { $0 == " " || $0 == ";" }).contains("usedtx=1") {
                usesDTX = true
            }
            if ufrag == nil, line.hasPrefix("a=ice-ufrag:") { ufrag = String(line.dropFirst(12)) }
            if pwd == nil, line.hasPrefix("a=ice-pwd:") { pwd = String(line.dropFirst(10)) }
            if setup == nil, line.hasPrefix("a=setup:") { setup = String(line.dropFirst(8)) }
            if fingerprint == nil, line.hasPrefix("a=fingerprint:") {
                let parts = line.dropFirst(14).split(separator: " ")
                if parts.count == 2 { fingerprint = DTLSFingerprint(algorithm: String(parts[0]), hex: String(parts[1])) }
            }
            if candidate == nil, line.hasPrefix("a=candidate:") {
                let parts = line.split(separator: " ")
                if parts.count >= 6, parts[2].lowercased() == "udp", let port = Int(parts[5]) {
                    candidate = (String(parts[4]), port)
                }
            }
            if tcpPort == nil, line.hasPrefix("a=candidate:"), line.contains(" tcptype passive") {
                let parts = line.split(separator: " ")
                if parts.count >= 6, parts[2].lowercased() == "tcp", let port = Int(parts[5]), (1...65_535).contains(port) {
                    tcpPort = port
                }
            }
        }
        guard let ufrag, let pwd, let ice = try? ICECredentials(ufrag: ufrag, password: pwd) else {
            throw .missing("ICE credentials")
        }
        guard let candidate else { throw .missing("UDP candidate") }
        guard let fingerprint else { throw .missing("sha-256 fingerprint") }
        return Answer(ice: ice, host: candidate.0, port: candidate.1, fingerprint: fingerprint,
                      serverIsPassive: setup != "active", usesDTX: usesDTX, tcpPort: tcpPort, transportCC: transportCC,
                      simulcast: simulcast)
    }
}
