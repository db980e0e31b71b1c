/// Entry points shared by the libFuzzer harnesses in `Fuzz/<Name>/` and by `FuzzReplayTests`,
/// which replays every committed corpus and crash input through the same code without the
/// fuzzer. Each `exercise…` function takes one input, drives a parser (or a whole engine) the
/// way the server does with bytes from the network, and reads every lazily decoded part of the
/// result. Thrown errors are expected and ignored; the only failures are traps in the code under
/// test and the few invariants checked with `fuzzRequire`, which trap too so that libFuzzer
/// records the input.
///
/// Inputs are plain bytes. Engines fed a sequence of datagrams (`exerciseDTLS`,
/// `exerciseDatagram`) read a mode byte and then length-prefixed datagrams; see `FuzzInput`.

/// One fuzz target: the folder names under `Fuzz/`, `Fuzz/Corpus/` and `Fuzz/Crashes/`.
public enum FuzzTarget: String, CaseIterable, Sendable, CustomStringConvertible {
    /// STUN parse and demultiplexing peeks, ICE-lite agent (raw and re-signed requests).
    case stun = "FuzzSTUN"
    /// RTP header, packet, RFC 8285 extensions, VP8 descriptor and header, in-place rewriting.
    case rtp = "FuzzRTP"
    /// RTCP compound validation, every packet type's parser, serialization of what parsed.
    case rtcp = "FuzzRTCP"
    /// SDP parse, offer analysis and the answer built from an accepted offer.
    case sdp = "FuzzSDP"
    /// DTLS records from a peer into an OpenSSL-backed `DTLSEndpoint` (server and client role).
    case dtls = "FuzzDTLS"
    /// The per-datagram server path: RFC 7983 classifier, `DatagramRouter.route`, and
    /// `PeerTransport.receive` before ICE, after ICE, and connected (fuzz RTP/RTCP SRTP-protected).
    case datagram = "FuzzDatagram"
    /// RFC 4571 deframing of a TCP media stream (ICE-TCP), cut into reads at random boundaries.
    case tcpFraming = "FuzzTCPFraming"

    public var description: String { rawValue }

    /// Runs one input through this target's entry point.
    public func exercise(_ bytes: [UInt8]) {
        switch self {
        case .stun: exerciseSTUN(bytes)
        case .rtp: exerciseRTP(bytes)
        case .rtcp: exerciseRTCP(bytes)
        case .sdp: exerciseSDP(bytes)
        case .dtls: exerciseDTLS(bytes)
        case .datagram: exerciseDatagram(bytes)
        case .tcpFraming: exerciseTCPFraming(bytes)
        }
    }
}

/// Traps with `message` when `condition` is false: an invariant of the code under test broke.
/// (A harness cannot report anything but a crash to libFuzzer.)
@inline(__always)
func fuzzRequire(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
                 file: StaticString = #fileID, line: UInt = #line) {
    if !condition() { fatalError("fuzz invariant failed: \(message())", file: file, line: line) }
}

/// Keeps a computed value alive so the optimizer cannot drop the work that produced it.
@inline(never)
func consume<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// Reads a multi-datagram input: one mode byte, then datagrams, each a 2-byte big-endian length
/// followed by that many bytes (fewer at the end of the input: the last datagram takes the rest).
/// At most `maximumDatagrams` datagrams are read, so one input bounds the work it causes.
public struct FuzzInput: Sendable {
    public static let maximumDatagrams = 24

    public let mode: UInt8
    public let datagrams: [[UInt8]]

    public init(_ bytes: [UInt8]) {
        mode = bytes.first ?? 0
        var datagrams: [[UInt8]] = []
        var offset = 1
        while offset + 2 <= bytes.count, datagrams.count < Self.maximumDatagrams {
            let length = Int(bytes.uint16(at: offset))
            let start = offset + 2
            let end = min(start + length, bytes.count)
            datagrams.append(Array(bytes[start..<end]))
            offset = end
        }
        self.datagrams = datagrams
    }

    /// The inverse of `init`: builds an input (seed corpora are written with it).
    public static func encode(mode: UInt8, datagrams: [[UInt8]]) -> [UInt8] {
        var out = [mode]
        for datagram in datagrams {
            let length = min(datagram.count, 0xFFFF)
            out += [UInt8(length >> 8), UInt8(length & 0xFF)]
            out += datagram.prefix(length)
        }
        return out
    }
}
