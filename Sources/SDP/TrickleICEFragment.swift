/// An SDP fragment as WHIP and WHEP carry it in a PATCH (`application/trickle-ice-sdpfrag`,
/// RFC 8840 §9 and RFC 9725 §4.3): ICE credentials, options, candidates and their media
/// sections, and no session description around them. A fragment whose credentials differ from
/// the call's asks for an ICE restart; one with the same credentials trickles candidates, which
/// an ICE-lite server has no use for.
///
/// Parsing is bounded (64 KiB, 1,000 lines) and never traps; the first line that does not
/// belong in a fragment is the error.
public struct TrickleICEFragment: Sendable, Equatable {
    public static let maximumBytes = 64 * 1024
    public static let maximumLines = 1_000

    public var iceUfrag: String?
    public var icePwd: String?
    public var iceOptions: [String] = []
    /// The mids of the fragment's media sections, in order.
    public var mids: [String] = []
    public var candidates: [Candidate] = []
    public var endOfCandidates = false

    public init(parsing text: String) throws(SDPFragmentError) {
        guard text.utf8.count <= Self.maximumBytes else { throw .tooLarge }
        var count = 0
        for raw in text.split(whereSeparator: \.isNewline) {
            count += 1
            guard count <= Self.maximumLines else { throw .tooLarge }
            try read(String(raw), number: count)
        }
        if let ufrag = iceUfrag, !OfferAnalysis.isICEChars(ufrag, count: 4...256) { throw .invalidCredentials }
        if let pwd = icePwd, !OfferAnalysis.isICEChars(pwd, count: 22...256) { throw .invalidCredentials }
        if (iceUfrag == nil) != (icePwd == nil) { throw .invalidCredentials }
    }

    private mutating func read(_ line: String, number: Int) throws(SDPFragmentError) {
        if line.hasPrefix("m=") {
            guard line.split(separator: " ").count >= 4 else { throw .malformedLine(number) }
            return
        }
        guard line.hasPrefix("a=") else { throw .unexpectedLine(number) }
        let attribute = line.dropFirst(2)
        let (name, value) = attribute.firstIndex(of: ":").map {
            (String(attribute[..<$0]), String(attribute[attribute.index(after: $0)...]))
        } ?? (String(attribute), "")
        switch name {
        case "ice-ufrag": try setOnce(&iceUfrag, value, number: number)
        case "ice-pwd": try setOnce(&icePwd, value, number: number)
        case "ice-options": iceOptions = value.split(separator: " ").map(String.init)
        case "mid":
            guard !value.isEmpty, value.utf8.count <= 32 else { throw .malformedLine(number) }
            mids.append(value)
        case "candidate":
            guard let candidate = Candidate(parsing: value) else { throw .malformedLine(number) }
            candidates.append(candidate)
        case "end-of-candidates": endOfCandidates = true
        case "group": break
        default: break  // other attributes are legal in a fragment and mean nothing here
        }
    }

    /// Credentials may be repeated per media section (RFC 8840 §9) but must agree.
    private func setOnce(_ field: inout String?, _ value: String, number: Int) throws(SDPFragmentError) {
        if let field, field != value { throw .conflictingCredentials(number) }
        field = value
    }
}

/// Why a trickle/restart fragment was refused (the API answers 400 naming it).
public enum SDPFragmentError: Error, Equatable, Sendable {
    case tooLarge
    /// A line that is neither `a=` nor `m=` (1-based line number).
    case unexpectedLine(Int)
    case malformedLine(Int)
    /// `ice-ufrag` or `ice-pwd` given twice with different values.
    case conflictingCredentials(Int)
    /// Credentials outside RFC 8839's syntax, or only one of the two.
    case invalidCredentials

    public var message: String {
        switch self {
        case .tooLarge: "the fragment exceeds \(TrickleICEFragment.maximumBytes) bytes or \(TrickleICEFragment.maximumLines) lines"
        case .unexpectedLine(let n): "line \(n) is not an a= or m= line"
        case .malformedLine(let n): "line \(n) is malformed"
        case .conflictingCredentials(let n): "line \(n) repeats ice-ufrag or ice-pwd with another value"
        case .invalidCredentials: "ice-ufrag and ice-pwd must both be present and valid (RFC 8839)"
        }
    }
}
