/// The `a=setup` attribute (RFC 4145 §4, used for DTLS by RFC 5763 §5): which side opens the
/// DTLS association. The offer carries `actpass` (RFC 8842 §5.2); the answer picks a role.
public enum Setup: String, Sendable, Hashable, CaseIterable {
    /// The endpoint initiates the DTLS handshake (DTLS client).
    case active
    /// The endpoint waits for the handshake (DTLS server).
    case passive
    /// The endpoint can do either; only valid in an offer.
    case actpass
    /// No connection yet; DTLS-SRTP cannot run with it.
    case holdconn

    /// The role an answerer takes for an offer carrying `self`, or nil when no DTLS role fits
    /// (`holdconn`). Chorus answers `passive` to `actpass` so the browser, which has already
    /// gathered its path, sends the first flight (RFC 5763 §5 recommends `active` for the
    /// answerer; both are allowed, and an ICE-lite server never starts connectivity itself).
    public var answerRole: Setup? {
        switch self {
        case .actpass, .active: return .passive
        case .passive: return .active
        case .holdconn: return nil
        }
    }
}
