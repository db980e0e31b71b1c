import ChorusTestSupport
import ChorusCore
import Foundation
import Testing
@testable import SDP

/// The captured browser and aiortc offers in `Fixtures/` (see its README), loaded from the test
/// bundle, plus helpers shared by the SDP tests.
enum Fixture: String, CaseIterable, CustomStringConvertible, Sendable {
    case chromeAV = "chrome-av-2slots"
    case chromeAudioOnly = "chrome-audio-only"
    case chromeSimulcast = "chrome-simulcast"
    case chromeSimulcastQHF = "chrome-simulcast-qhf"
    case chromeListener = "chrome-listener"
    case firefoxAV = "firefox-av-2slots"
    case firefoxAudioOnly = "firefox-audio-only"
    case firefoxSimulcast = "firefox-simulcast"
    case aiortcAV = "aiortc-av-2slots"
    case aiortcAudioOnly = "aiortc-audio-only"

    var description: String { rawValue }

    /// The fixture's text exactly as captured (CRLF line endings).
    var text: String {
        get throws {
            try Fixtures.sdp(rawValue + ".sdp")
        }
    }

    var offer: SessionDescription {
        get throws { try SessionDescription(parsing: text) }
    }

    func analysis(videoSlots: Int = 9) throws -> OfferAnalysis {
        try OfferAnalysis(offer: offer, videoSlots: videoSlots)
    }
}


/// Line-level edits of fixture text for the negative tests.
extension String {
    /// The text without the lines for which `predicate` holds (CRLF kept).
    func removingLines(where predicate: (Substring) -> Bool) -> String {
        split(separator: "\r\n", omittingEmptySubsequences: false)
            .filter { !predicate($0) }
            .joined(separator: "\r\n")
    }

    /// The text with every line equal to `old` replaced by `new`.
    func replacingLines(_ old: String, with new: String) -> String {
        split(separator: "\r\n", omittingEmptySubsequences: false)
            .map { $0 == old ? Substring(new) : $0 }
            .joined(separator: "\r\n")
    }

    /// The m= sections as separate texts, with the session part first.
    var sessionAndSections: (session: String, sections: [String]) {
        let parts = components(separatedBy: "\r\nm=")
        return (parts[0] + "\r\n", parts.dropFirst().map { "m=" + $0 + ($0.hasSuffix("\r\n") ? "" : "\r\n") })
    }
}

/// Local parameters for answers, with one slot stream per slot of `analysis`.
func localParameters(for analysis: OfferAnalysis, address: String = "203.0.113.7", port: UInt16 = 40_000)
    throws -> LocalParameters
{
    let fingerprint = try #require(CertificateFingerprint(parsing:
        "sha-256 AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99"))
    let slots = analysis.slots.indices.map { index in
        OutgoingStream(ssrc: SSRC(UInt32(1000 + 2 * index)), rtxSSRC: SSRC(UInt32(1001 + 2 * index)),
                       streamID: "slot-\(index)", trackID: "slot-\(index)-video")
    }
    return LocalParameters(
        sessionID: 4_611_686_018_427_387_904, iceUfrag: "srvUfrag", icePwd: "serverPassword0123456789",
        fingerprint: fingerprint, candidateAddress: address, candidatePort: port, cname: "chorus",
        audioStream: OutgoingStream(ssrc: SSRC(777), streamID: "mix", trackID: "mix-audio"),
        slotStreams: slots)
}

func pt(_ value: UInt8) -> PayloadType { PayloadType(masking: value) }
