/// The STUN attributes ICE adds to connectivity checks (RFC 8445 §7.1.1–§7.1.2, §16.1):
/// - PRIORITY (0x0024, 4 bytes): the priority a peer-reflexive candidate learned from this check
///   would get;
/// - USE-CANDIDATE (0x0025, empty): the controlling agent nominates this pair;
/// - ICE-CONTROLLED (0x8029) / ICE-CONTROLLING (0x802A), 8 bytes each: the sender's role and its
///   64-bit tie-breaker, used to detect and repair role conflicts (RFC 8445 §7.3.1.1).
public enum ICEAttributes {}

extension STUNMessage {
    /// PRIORITY; nil when absent.
    public var priority: UInt32? { index.priority.flatMap { bytes.stunUInt32(at: $0.lowerBound) } }

    /// True when USE-CANDIDATE is present.
    public var useCandidate: Bool { index.useCandidate }

    /// The tie-breaker in ICE-CONTROLLING; nil when absent.
    public var iceControlling: UInt64? { index.iceControlling.flatMap { bytes.stunUInt64(at: $0.lowerBound) } }

    /// The tie-breaker in ICE-CONTROLLED; nil when absent.
    public var iceControlled: UInt64? { index.iceControlled.flatMap { bytes.stunUInt64(at: $0.lowerBound) } }
}

extension STUNMessageBuilder {
    /// Appends PRIORITY (RFC 8445 §7.1.1).
    public mutating func appendPriority(_ priority: UInt32) {
        appendAttributeHeader(.priority, length: 4)
        bytes.appendBigEndian(priority)
        appendPadding(valueLength: 4)
    }

    /// Appends USE-CANDIDATE (RFC 8445 §7.1.2): only the controlling agent sends it.
    public mutating func appendUseCandidate() {
        appendAttributeHeader(.useCandidate, length: 0)
        appendPadding(valueLength: 0)
    }

    /// Appends ICE-CONTROLLING with the sender's tie-breaker (RFC 8445 §7.1.3).
    public mutating func appendICEControlling(tieBreaker: UInt64) {
        appendAttributeHeader(.iceControlling, length: 8)
        bytes.appendBigEndian(tieBreaker)
        appendPadding(valueLength: 8)
    }

    /// Appends ICE-CONTROLLED with the sender's tie-breaker (RFC 8445 §7.1.3).
    public mutating func appendICEControlled(tieBreaker: UInt64) {
        appendAttributeHeader(.iceControlled, length: 8)
        bytes.appendBigEndian(tieBreaker)
        appendPadding(valueLength: 8)
    }
}
