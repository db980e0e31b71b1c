import ChorusTestSupport
import SDP
import Testing

/// The WHIP/WHEP PATCH body (`application/trickle-ice-sdpfrag`): RFC 9725's own example, the
/// restart form, and malformed fragments refused by line.
@Suite("SDP fragments (RFC 8840, RFC 9725 §4.3)")
struct TrickleICEFragmentTests {
    /// RFC 9725 §4.3.1, the trickle example (with CRLF as on the wire).
    static let rfcExample = [
        "a=ice-options:trickle ice2",
        "a=group:BUNDLE 0 1",
        "m=audio 9 UDP/TLS/RTP/SAVPF 111",
        "a=mid:0",
        "a=ice-ufrag:EsAw",
        "a=ice-pwd:P2uYro0UCOQ4zxjKXaWCBui1",
        "a=candidate:1387637174 1 udp 2122260223 192.0.2.1 61764 typ host generation 0 ufrag EsAw network-id 1",
        "a=candidate:3471623853 1 udp 2122194687 198.51.100.2 61765 typ host generation 0 ufrag EsAw network-id 2",
        "a=candidate:473322822 1 tcp 1518280447 192.0.2.1 9 typ host tcptype active generation 0 ufrag EsAw network-id 1",
        "a=candidate:2154773085 1 tcp 1518214911 198.51.100.2 9 typ host tcptype active generation 0 ufrag EsAw network-id 2",
        "a=end-of-candidates",
    ].joined(separator: "\r\n") + "\r\n"

    @Test func theRFCExampleParses() throws {
        let fragment = try TrickleICEFragment(parsing: Self.rfcExample)
        #expect(fragment.iceUfrag == "EsAw" && fragment.icePwd == "P2uYro0UCOQ4zxjKXaWCBui1")
        #expect(fragment.iceOptions == ["trickle", "ice2"])
        #expect(fragment.mids == ["0"])
        #expect(fragment.candidates.count == 4)
        #expect(fragment.candidates.filter { $0.tcpType == "active" }.count == 2)
        #expect(fragment.endOfCandidates)
    }

    @Test func aRestartFragmentIsJustNewCredentials() throws {
        let fragment = try TrickleICEFragment(parsing: "a=ice-ufrag:ZZy2\r\na=ice-pwd:aaaaaaaaaaaaaaaaaaaaaaaa\r\n")
        #expect(fragment.iceUfrag == "ZZy2" && fragment.candidates.isEmpty)
    }

    @Test func badFragmentsAreRefusedByLine() {
        #expect(throws: SDPFragmentError.unexpectedLine(2)) { try TrickleICEFragment(parsing: "a=mid:0\r\nv=0\r\n") }
        #expect(throws: SDPFragmentError.malformedLine(1)) { try TrickleICEFragment(parsing: "a=candidate:1 1 udp\r\n") }
        #expect(throws: SDPFragmentError.conflictingCredentials(2)) {
            try TrickleICEFragment(parsing: "a=ice-ufrag:abcd\r\na=ice-ufrag:efgh\r\n")
        }
        #expect(throws: SDPFragmentError.invalidCredentials) { try TrickleICEFragment(parsing: "a=ice-ufrag:abcd\r\n") }
        #expect(throws: SDPFragmentError.invalidCredentials) {
            try TrickleICEFragment(parsing: "a=ice-ufrag:ab\r\na=ice-pwd:aaaaaaaaaaaaaaaaaaaaaaaa\r\n")
        }
        #expect(throws: SDPFragmentError.tooLarge) {
            try TrickleICEFragment(parsing: String(repeating: "a=end-of-candidates\r\n", count: 1_001))
        }
    }

    @Test func everyTruncationParsesOrThrowsWithoutTrapping() {
        for cut in truncations(of: Array(Self.rfcExample.utf8)) {
            _ = try? TrickleICEFragment(parsing: String(decoding: cut, as: UTF8.self))
        }
    }
}
