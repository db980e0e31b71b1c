import ChorusCore

/// Consent freshness (RFC 7675) as seen by an ICE-lite server. RFC 7675 has the sending agent
/// refresh consent with its own checks; a lite agent sends none, so Chorus counts as consent an
/// authenticated Binding request from the selected address, which browsers send every few
/// seconds (RFC 7675 §5.1 paces them at about 5 s). After `timeout` (30 s, RFC 7675 §5.1)
/// without one, the peer has withdrawn consent and media must stop.
///
/// Driven by its owner: `refresh(at:)` on each qualifying check, `deadline` to arm a timer,
/// `isExpired(now:)` when it fires.
public struct ConsentFreshness: Equatable, Sendable {
    /// RFC 7675 §5.1: consent expires 30 seconds after the last successful check.
    public static let defaultTimeoutNanoseconds: UInt64 = 30_000_000_000

    public let timeoutNanoseconds: UInt64
    /// When consent was last granted; nil until the first nominated check.
    public private(set) var lastRefresh: MediaTime?

    public init(timeoutNanoseconds: UInt64 = ConsentFreshness.defaultTimeoutNanoseconds) {
        self.timeoutNanoseconds = timeoutNanoseconds
    }

    /// Records a valid check at `now`. Time never runs backwards here: a stale `now` is ignored.
    public mutating func refresh(at now: MediaTime) {
        if let last = lastRefresh, now < last { return }
        lastRefresh = now
    }

    /// When consent runs out unless refreshed; nil before any consent was granted.
    public var deadline: MediaTime? {
        lastRefresh?.adding(nanoseconds: timeoutNanoseconds)
    }

    /// True once `timeout` has passed since the last refresh; false before the first one (the
    /// owner applies its own connection-setup timeout to a peer that never completes ICE).
    public func isExpired(now: MediaTime) -> Bool {
        guard let deadline else { return false }
        return now >= deadline
    }
}
