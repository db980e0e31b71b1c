/// An RTP synchronization source identifier (RFC 3550 §3, §5.1): the 32-bit number that names one
/// media stream inside a session. It is a newtype so that an SSRC can never be mixed up with a
/// timestamp or a sequence number; the RTP and RTCP parsers produce it and the forwarder, the mixer
/// and the NACK/RTX caches key their maps by it.
public struct SSRC: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32

    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    public init(_ rawValue: UInt32) {
        self.rawValue = rawValue
    }

    public static func < (lhs: SSRC, rhs: SSRC) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Decimal, the way browsers' `getStats()` and SDP `a=ssrc:` lines print it.
    public var description: String { String(rawValue) }
}

/// An RTP payload type (RFC 3550 §5.1): the 7-bit number an SDP `a=rtpmap` binds to a codec.
/// Construction refuses values above 127, so a `PayloadType` always fits the header field; the
/// parser builds it from the header's low seven bits with `init(masking:)`.
public struct PayloadType: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Largest value the 7-bit header field can carry.
    public static let maximum: UInt8 = 127

    public let rawValue: UInt8

    /// nil when `rawValue` does not fit in 7 bits.
    public init?(rawValue: UInt8) {
        guard rawValue <= Self.maximum else { return nil }
        self.rawValue = rawValue
    }

    /// nil when `value` does not fit in 7 bits.
    public init?(_ value: UInt8) {
        self.init(rawValue: value)
    }

    /// The low seven bits of `byte`: the second RTP header byte without its marker bit.
    public init(masking byte: UInt8) {
        rawValue = byte & 0x7F
    }

    public static func < (lhs: PayloadType, rhs: PayloadType) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { String(rawValue) }
}
