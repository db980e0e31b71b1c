/// The media direction attributes `a=sendrecv`, `a=sendonly`, `a=recvonly` and `a=inactive`
/// (RFC 8866 §6.7), also used as the optional direction of `a=extmap` (RFC 8285 §5).
///
/// A direction is always written from the point of view of the description's author: an offer's
/// `sendonly` means the offerer sends. `reversed` gives the direction an answerer mirrors back.
public enum Direction: String, Sendable, Hashable, CaseIterable {
    case sendrecv
    case sendonly
    case recvonly
    case inactive

    /// The direction seen from the other side: `sendonly` ⇄ `recvonly`; the others are symmetric.
    public var reversed: Direction {
        switch self {
        case .sendonly: return .recvonly
        case .recvonly: return .sendonly
        case .sendrecv, .inactive: return self
        }
    }

    /// True when the author of the description sends media in this direction.
    public var sends: Bool { self == .sendrecv || self == .sendonly }

    /// True when the author of the description receives media in this direction.
    public var receives: Bool { self == .sendrecv || self == .recvonly }
}
