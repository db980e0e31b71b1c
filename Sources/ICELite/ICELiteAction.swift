import ChorusCore

/// What the owner of an `ICELiteAgent` must do with one incoming datagram. The agent never
/// sends anything itself: the owner (the participant's transport) performs the action.
public enum ICELiteAction: Equatable, Sendable {
    /// Send a Binding success response (XOR-MAPPED-ADDRESS, MESSAGE-INTEGRITY, FINGERPRINT).
    case respond(bytes: [UInt8], to: TransportAddress)
    /// Send a Binding success response, and use `to` as the selected address from now on: the
    /// request carried USE-CANDIDATE (RFC 8445 §7.3.1.5). Returned for every nominating check,
    /// so the owner compares with its current binding to spot a change of path.
    case respondAndNominate(bytes: [UInt8], to: TransportAddress)
    /// Send a Binding error response (`code` is its ERROR-CODE: 400, 401, 420 or 487). It
    /// carries MESSAGE-INTEGRITY when the request was authenticated.
    case error(bytes: [UInt8], to: TransportAddress, code: Int)
    /// A Binding indication (RFC 8445 §11 keepalive): send nothing, and it is not a drop. It
    /// renewed consent only when it came from the selected address signed with our password.
    case keepalive(renewedConsent: Bool)
    /// Send nothing; count `reason` in metrics.
    case drop(reason: ICEDropReason)
}

/// Why a datagram handed to the ICE-lite agent was dropped without an answer. Small and stable:
/// the owner counts these in metrics.
public enum ICEDropReason: Error, Hashable, Sendable, CaseIterable {
    /// Not STUN at all: wrong first byte, top bits or magic cookie (RFC 7983, RFC 8489 §6).
    case notSTUN
    /// STUN header but broken structure: bad length, truncated or invalid attributes.
    case malformed
    /// FINGERPRINT missing or wrong (RFC 8489 §7, §14.7): ICE requires it on every check.
    case badFingerprint
    /// A response: an ICE-lite agent sends no requests, so it expects none.
    case notARequest
    /// A request for a method other than Binding.
    case unsupportedMethod
    /// USERNAME is not `localUfrag:remoteUfrag`. RFC 8489 §9.1.3 would answer 401, but a
    /// stranger gets nothing: no state, no response, no confirmation that a ufrag exists.
    case unknownUsername
}
