#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ChorusCore

/// A 64-bit NTP timestamp (RFC 3550 §4, RFC 5905 §6): seconds since 1900 in the high 32 bits,
/// the binary fraction of a second in the low 32. Sender reports carry it; its middle 32 bits
/// (`compact`) come back in receiver reports as LSR, from which the sender computes round-trip
/// time (RFC 3550 §6.4.1). Conversions to Unix time follow RFC 4330 §3: a seconds field with its
/// top bit clear is read as era 1 (2036–2104).
public struct NTPTimestamp: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Seconds between the NTP epoch (1900) and the Unix epoch (1970).
    public static let unixEpochOffset: Int64 = 2_208_988_800

    public var rawValue: UInt64

    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public init(seconds: UInt32, fraction: UInt32) {
        rawValue = UInt64(seconds) << 32 | UInt64(fraction)
    }

    public var seconds: UInt32 { UInt32(truncatingIfNeeded: rawValue >> 32) }
    public var fraction: UInt32 { UInt32(truncatingIfNeeded: rawValue) }

    /// The middle 32 bits (16.16 fixed point), as LSR in a report block.
    public var compact: UInt32 { UInt32(truncatingIfNeeded: rawValue >> 16) }

    /// From nanoseconds since 1970 (negative before it), rounded down to the NTP resolution.
    public init(unixNanoseconds: Int64) {
        let seconds = unixNanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        var whole = seconds.quotient + Self.unixEpochOffset
        var nanos = seconds.remainder
        if nanos < 0 {
            nanos += 1_000_000_000
            whole -= 1
        }
        // nanos < 10^9 < 2^30, so the shift stays within 62 bits.
        let fraction = (UInt64(nanos) << 32) / 1_000_000_000
        self.init(seconds: UInt32(truncatingIfNeeded: whole), fraction: UInt32(truncatingIfNeeded: fraction))
    }

    /// Nanoseconds since 1970; rounds up so that `init(unixNanoseconds:)` round-trips exactly.
    public var unixNanoseconds: Int64 {
        // RFC 4330 §3: top bit clear means era 1, which starts in 2036.
        let era: Int64 = seconds & 0x8000_0000 == 0 ? 1 << 32 : 0
        let whole = Int64(seconds) + era - Self.unixEpochOffset
        let nanos = (UInt64(fraction) * 1_000_000_000 + 0xFFFF_FFFF) >> 32
        return whole * 1_000_000_000 + Int64(nanos)
    }

    public init(date: Date) {
        let nanoseconds = (date.timeIntervalSince1970 * 1e9).rounded(.down)
        // Dates beyond ±146 years of 1970 (or not finite) do not fit; clamp instead of trapping.
        let limit = Double(Int64.max / 2)
        let clamped = nanoseconds.isFinite ? Swift.max(Swift.min(nanoseconds, limit), -limit) : 0
        self.init(unixNanoseconds: Int64(clamped))
    }

    public var date: Date {
        Date(timeIntervalSince1970: Double(unixNanoseconds) / 1e9)
    }

    public static func < (lhs: NTPTimestamp, rhs: NTPTimestamp) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { "NTP(\(seconds).\(fraction))" }
}

/// Ties the monotonic `MediaTime` the engines run on to wall-clock NTP time, for stamping sender
/// reports: the owner samples both clocks once, and every later NTP time is derived from the
/// monotonic clock, so SR timestamps never jump when the wall clock is adjusted.
public struct NTPClockReference: Sendable, Equatable {
    public let mediaTime: MediaTime
    public let ntp: NTPTimestamp

    public init(mediaTime: MediaTime, ntp: NTPTimestamp) {
        self.mediaTime = mediaTime
        self.ntp = ntp
    }

    /// The NTP time at `time`; times before the reference count backwards from it.
    public func ntp(at time: MediaTime) -> NTPTimestamp {
        if time >= mediaTime {
            let ahead = CompactNTP.ntpUnits(nanoseconds: time.nanoseconds(since: mediaTime))
            return NTPTimestamp(rawValue: ntp.rawValue &+ ahead)
        }
        let behind = CompactNTP.ntpUnits(nanoseconds: mediaTime.nanoseconds(since: time))
        return NTPTimestamp(rawValue: ntp.rawValue &- behind)
    }

    /// The media time of `timestamp`, clamped to 0 for times before the media clock's origin.
    public func mediaTime(at timestamp: NTPTimestamp) -> MediaTime {
        let delta = timestamp.rawValue &- ntp.rawValue
        if delta < 1 << 63 {  // at or after the reference (modulo the 2^64 wrap)
            return mediaTime.adding(nanoseconds: CompactNTP.nanoseconds(ntpUnits: delta))
        }
        let back = CompactNTP.nanoseconds(ntpUnits: 0 &- delta)
        return MediaTime(nanoseconds: mediaTime.nanoseconds >= back ? mediaTime.nanoseconds - back : 0)
    }
}

/// Arithmetic on the 32-bit "compact" NTP form (16.16 fixed-point seconds) used by report
/// blocks: LSR is the compact form of the last SR's timestamp, DLSR a delay in 1/65536 s.
public enum CompactNTP {
    /// `nanoseconds` in units of 2^-32 s (the full NTP resolution), wrapping past 2^32 s.
    public static func ntpUnits(nanoseconds: UInt64) -> UInt64 {
        let seconds = nanoseconds / 1_000_000_000
        let remainder = nanoseconds % 1_000_000_000
        return seconds << 32 &+ (remainder << 32) / 1_000_000_000
    }

    /// Units of 2^-32 s back to nanoseconds, without overflow for any input.
    public static func nanoseconds(ntpUnits: UInt64) -> UInt64 {
        let seconds = ntpUnits >> 32
        let fraction = ntpUnits & 0xFFFF_FFFF
        return seconds &* 1_000_000_000 &+ (fraction * 1_000_000_000) >> 32
    }

    /// A delay as DLSR (1/65536 s), saturating at the field's maximum (about 18 hours).
    public static func delay(nanoseconds: UInt64) -> UInt32 {
        let units = ntpUnits(nanoseconds: nanoseconds) >> 16
        return units > UInt64(UInt32.max) ? .max : UInt32(units)
    }

    /// A compact value (1/65536 s units) in nanoseconds.
    public static func nanoseconds(compact: UInt32) -> UInt64 {
        (UInt64(compact) * 1_000_000_000) >> 16
    }

    /// Round-trip time from a report block (RFC 3550 §6.4.1, Figure 2): arrival time A minus
    /// LSR minus DLSR, all compact. nil when LSR is 0 (no SR received yet) or the result would
    /// be negative (clock error, a stale block).
    public static func roundTripNanoseconds(
        arrival: UInt32, lastSenderReport: UInt32, delaySinceLastSenderReport: UInt32
    ) -> UInt64? {
        guard lastSenderReport != 0 else { return nil }
        let elapsed = arrival &- lastSenderReport  // wraps correctly across the 18-hour cycle
        guard elapsed >= delaySinceLastSenderReport, elapsed < 1 << 31 else { return nil }
        return nanoseconds(compact: elapsed - delaySinceLastSenderReport)
    }
}
