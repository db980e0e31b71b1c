import ChorusCore
import DTLS
import ICELite
import Testing

@testable import LoadGenerator

/// `chorus load --simulcast`, `--transport-cc` and `--tcp` on the client side: the offer they
/// make, what they read from the answer, a simulcast camera's keyframe requests per layer. (The
/// transport-cc feedback a participant returns is `LoadParticipantCallTests`' and, for the
/// transport itself, PeerTransportTests'.)
@Suite("Load generator: simulcast, transport-cc, ICE-TCP")
struct LoadSimulcastTests {
    static let ice = try? ICECredentials(ufrag: "ldA1", password: "loadPasswordOf24Chars+/")

    /// Chromium's shape: RID extension and `a=rid … send` per layer, `a=simulcast:send q;h;f`,
    /// no SSRC announced for the camera; transport-wide sequence numbers on every section and
    /// transport-cc feedback (with RTX, where the server's probes go).
    @Test func theOfferAsksForSimulcastAndTransportCC() throws {
        let ice = try #require(Self.ice)
        let media = LoadSDP.Media(audioSSRC: 11, videoSSRC: 22, slots: 2, simulcastRIDs: ["q", "h", "f"], transportCC: true)
        let lines = LoadSDP.offer(ice: ice, fingerprint: "sha-256 AB", port: 5_000, media: media)
            .components(separatedBy: "\r\n")
        #expect(lines.filter { $0 == "a=extmap:3 \(LoadSDP.transportWideCCURI)" }.count == 4)
        #expect(lines.contains("a=rtcp-fb:111 transport-cc") && lines.contains("a=rtcp-fb:96 transport-cc"))
        #expect(lines.contains("a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"))
        #expect(["a=rid:q send", "a=rid:h send", "a=rid:f send", "a=simulcast:send q;h;f"].allSatisfy(lines.contains))
        #expect(lines.contains("a=rtpmap:97 rtx/90000") && lines.contains("a=fmtp:97 apt=96"))
        #expect(!lines.contains { $0.hasPrefix("a=ssrc:22") }, "Chromium announces no SSRC for a simulcast camera")
        let plain = LoadSDP.offer(ice: ice, fingerprint: "sha-256 AB", port: 5_000,
                                  media: .init(audioSSRC: 11, videoSSRC: 22, slots: 1))
        #expect(!plain.contains("transport-cc") && !plain.contains("a=simulcast") && plain.contains("a=ssrc:22 cname:load"))
    }

    @Test func anICETCPOfferCarriesAnActiveTCPCandidate() throws {
        let ice = try #require(Self.ice)
        let sdp = LoadSDP.offer(ice: ice, fingerprint: "sha-256 AB", host: "127.0.0.1", port: 9,
                                media: .init(audioSSRC: 11, tcp: true))
        #expect(sdp.contains("a=candidate:1 1 tcp 1518280447 127.0.0.1 9 typ host tcptype active\r\n"))
        #expect(!sdp.contains(" udp "))
    }

    /// What the answer says: the passive TCP candidate's port, transport-cc kept, simulcast accepted.
    @Test func theAnswerTellsTCPPortTransportCCAndSimulcast() throws {
        let answer = [
            "v=0", "a=ice-ufrag:abcd", "a=ice-pwd:0123456789012345678901", "a=fingerprint:sha-256 AB:CD", "a=setup:passive",
            "a=candidate:1 1 udp 2130706431 127.0.0.1 10000 typ host",
            "a=candidate:2 1 tcp 1518280447 127.0.0.1 10001 typ host tcptype passive",
            "a=extmap:3 \(LoadSDP.transportWideCCURI)", "a=simulcast:recv q;h;f",
        ].joined(separator: "\r\n")
        let parsed = try LoadSDP.parseAnswer(answer)
        #expect(parsed.port == 10_000 && parsed.tcpPort == 10_001 && parsed.transportCC && parsed.simulcast)
        let bare = try LoadSDP.parseAnswer(answer.components(separatedBy: "\r\n").prefix(6).joined(separator: "\r\n"))
        #expect(bare.tcpPort == nil && !bare.transportCC && !bare.simulcast)
        // A TCP candidate with a port out of range is ignored rather than trusted.
        let hostile = try LoadSDP.parseAnswer(answer.replacingOccurrences(of: "10001 typ host tcptype", with: "99999 typ host tcptype"))
        #expect(hostile.tcpPort == nil)
    }

    /// Three streams, lowest first, each with its own SSRC; a PLI for one layer restarts that
    /// layer only, one for an SSRC not ours changes nothing.
    @Test func aKeyframeRequestRestartsOnlyItsLayer() throws {
        let video = try LoadVideo.make(seconds: 1, width: 160, height: 90, bitrate: 100_000)
        let participant = LoadParticipant(
            room: 0, userId: "u", audio: nil, timeline: RoomTimeline(), isBurstTalker: false, isProbe: false,
            dtlsContext: try DTLSContext(certificate: DTLSCertificate(commonName: "test")),
            video: LoadCamera(layers: [video, video, video], rids: ["q", "h", "f"]))
        #expect(participant.videoSSRCs.count == 3 && Set(participant.videoSSRCs).count == 3)
        var camera = try #require(participant.camera)
        #expect(camera.ssrcs == participant.videoSSRCs)
        camera.handle(try LoadKeyframeRequestTests.pli(media: participant.videoSSRCs[2]))
        #expect(camera.senders.map(\.restartAtKeyFrame) == [false, false, true])
        camera.handle(try LoadKeyframeRequestTests.pli(media: 1))
        #expect(camera.keyframeRequestsReceived == 1)
    }
}
