import Foundation
import ICELite
import ChorusTestSupport
import Testing

@testable import LoadGenerator

/// Our answer to the offer Janus 1.1.2's VideoRoom sends a subscriber (captured from a real
/// Janus on this machine): what it must accept, reject and echo for Janus to start the stream.
@Suite("Load generator: answering a server's offer")
struct LoadSDPAnswerTests {
    static let offer: String = {
        // Stored with LF line ends; SDP on the wire uses CRLF.
        (try? Fixtures.sdp("janus-videoroom-subscriber-offer.sdp"))?.replacingOccurrences(of: "\n", with: "\r\n") ?? ""
    }()

    /// The transport of Janus's offer: its host candidate, credentials and session-level
    /// fingerprint; `actpass` lets us take the DTLS client role.
    @Test func readsTheOffersTransport() throws {
        let transport = try LoadSDP.parseAnswer(Self.offer)
        #expect(transport.host == "198.18.0.2" && transport.port == 53_466)
        #expect(transport.ice.ufrag == "opHq" && transport.serverIsPassive)
        #expect(transport.fingerprint.digest.count == 32)
    }

    /// VP8 (not its RTX) accepted receive-only on the offer's mid, in the BUNDLE group, with our
    /// transport and `setup:active`; other sections rejected with port 0.
    @Test func acceptsVP8ReceiveOnly() throws {
        let ice = try ICECredentials(ufrag: "ldA1", password: "loadPasswordOf24Chars+/")
        let withData = Self.offer + "m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\na=mid:1\r\n"
        let (sdp, payloadType) = LoadSDP.answer(toOffer: withData, ice: ice, fingerprint: "sha-256 AB:CD",
                                                host: "198.18.0.1", port: 40_000)
        let lines = sdp.components(separatedBy: "\r\n")
        #expect(payloadType == 96)
        #expect(lines.contains("m=video 40000 UDP/TLS/RTP/SAVPF 96"))
        #expect(lines.contains("a=group:BUNDLE 0"))
        #expect(lines.contains("a=recvonly") && lines.contains("a=setup:active") && lines.contains("a=mid:0"))
        #expect(lines.contains("a=candidate:1 1 udp 2130706431 198.18.0.1 40000 typ host"))
        #expect(lines.contains("a=ice-ufrag:ldA1") && lines.contains("a=fingerprint:sha-256 AB:CD"))
        #expect(lines.contains("m=application 0 UDP/DTLS/SCTP 0") && lines.contains("a=mid:1"))
        #expect(!lines.contains { $0.contains("rtx") })
        // Our own transport reads back from the answer, as Janus will read it.
        #expect(try LoadSDP.parseAnswer(sdp).port == 40_000)
    }

    /// An offer without VP8 (H.264 only) gets every section rejected and no payload type.
    @Test func rejectsAnOfferWithoutVP8() throws {
        let ice = try ICECredentials(ufrag: "ldA1", password: "loadPasswordOf24Chars+/")
        let h264 = Self.offer.replacingOccurrences(of: "VP8/90000", with: "H264/90000")
        let (sdp, payloadType) = LoadSDP.answer(toOffer: h264, ice: ice, fingerprint: "sha-256 AB:CD",
                                                host: "198.18.0.1", port: 40_000)
        #expect(payloadType == nil)
        #expect(sdp.contains("m=video 0 UDP/TLS/RTP/SAVPF 0"))
    }
}
