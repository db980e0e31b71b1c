/// The session-level `a=group:<semantics> <identification-tag> …` attribute (RFC 5888 §5).
/// Chorus uses the `BUNDLE` semantics (RFC 8843): the listed m= sections, by `a=mid`, share one
/// transport. The first tag of an offer's BUNDLE group is the offerer's BUNDLE-tag.
public struct Group: Sendable, Hashable {
    public var semantics: String
    public var identificationTags: [String]

    public static let bundle = "BUNDLE"

    public init(semantics: String, identificationTags: [String]) {
        self.semantics = semantics
        self.identificationTags = identificationTags
    }

    /// Parses `BUNDLE 0 1 2`; a group may list no tags. Nil when any piece is not a token.
    public init?(parsing value: String) {
        let parts = SDPSyntax.fields(value)
        guard let semantics = parts.first, parts.allSatisfy(SDPSyntax.isToken) else { return nil }
        self.init(semantics: semantics, identificationTags: Array(parts.dropFirst()))
    }

    /// True for a BUNDLE group (semantics compare case-insensitively).
    public var isBundle: Bool { SDPSyntax.equalsIgnoringCase(semantics, Self.bundle) }

    /// The attribute value, e.g. `BUNDLE 0 1 2`.
    public var value: String { ([semantics] + identificationTags).joined(separator: " ") }
}
