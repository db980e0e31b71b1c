import ChorusCore
import DTLS
import ICELite
import PeerTransport
import RTCP
import RTP
import SRTP
import Testing

@testable import LoadGenerator

/// `chorus load --simulcast`, `--transport-cc` and `--tcp` on the client side: the offer they
/// make, what they read from the answer, a simulcast camera's keyframe requests per layer, and
/// the transport-cc feedback a subscriber returns for what it received.
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
        let camera = LoadCamera(layers: [video, video, video], rids: ["q", "h", "f"])
        let participant = LoadParticipant(
            room: 0, userId: "u", audio: nil, timeline: RoomTimeline(), isBurstTalker: false, isProbe: false,
            dtlsContext: try DTLSContext(certificate: DTLSCertificate(commonName: "test")), video: camera)
        #expect(participant.videoSSRCs.count == 3 && Set(participant.videoSSRCs).count == 3)
        participant.receiveRTCP(LoadKeyframeRequestTests.pli(media: participant.videoSSRCs[2]))
        #expect(participant.videoSenders.map(\.restartAtKeyFrame) == [false, false, true])
        participant.receiveRTCP(LoadKeyframeRequestTests.pli(media: 1))
        #expect(participant.keyframeRequestsReceived == 1)
    }

    /// A subscriber records the transport-wide sequence number of each packet the server sends
    /// it, and after the feedback interval returns them as one transport-cc message (PT 205,
    /// FMT 15) that reports exactly those packets, with the gap as not received.
    @Test func theSubscriberReportsWhatArrived() throws {
        let participant = LoadParticipant(
            room: 0, userId: "u", audio: nil, timeline: RoomTimeline(), isBurstTalker: false, isProbe: false,
            dtlsContext: try DTLSContext(certificate: DTLSCertificate(commonName: "test")))
        let profile = SRTPProtectionProfile.aeadAES128GCM
        let (a, b) = ([UInt8](repeating: 1, count: profile.keyLength + profile.saltLength),
                      [UInt8](repeating: 2, count: profile.keyLength + profile.saltLength))
        let server = try OpenSSLSRTPTransform(SRTPKeyingMaterial(profile: profile, local: a, remote: b))
        participant.srtp = try OpenSSLSRTPTransform(SRTPKeyingMaterial(profile: profile, local: b, remote: a))
        participant.offersTransportCC = true
        participant.feedbackRecorder = TransportFeedbackRecorder()
        var sent: [[UInt8]] = []
        participant.send = { sent.append($0) }
        let start = MediaTime.seconds(10)
        for (index, sequence) in [UInt16(500), 501, 503].enumerated() {
            let fields = RTPHeaderFields(payloadType: PayloadType(masking: 96), sequenceNumber: UInt16(index), timestamp: 0,
                                         ssrc: SSRC(7), extensions: [RTPHeaderExtensionElement(
                                             id: LoadSDP.transportWideCCExtensionID, value: .transportSequenceNumber(sequence))])
            var packet: [UInt8] = []
            try fields.serialize(into: &packet)
            packet += [1, 2, 3]
            try server.protectRTP(&packet)
            participant.receive(packet, now: start.adding(milliseconds: UInt64(index) * 5))
        }
        participant.sendTransportFeedback(now: start.adding(milliseconds: 50))
        #expect(sent.isEmpty, "feedback before its interval")
        participant.sendTransportFeedback(now: start.adding(milliseconds: 120))
        #expect(sent.count == 1 && participant.transportFeedbackSent == 1)
        var packet = try #require(sent.first)
        try server.unprotectRTCP(&packet)
        let compound = try RTCPCompoundPacket(parsing: packet)
        guard case .transportFeedback(let feedback)? = compound.first(where: { _ in true }) else {
            Issue.record("not transport-cc feedback: \(compound)")
            return
        }
        #expect(feedback.baseSequenceNumber == 500 && feedback.packetStatusCount == 4)
        #expect(feedback.packets.map(\.isReceived) == [true, true, false, true])
    }
}
