/// An IP address and port, as the media edge sees a datagram's source or destination, and
/// whether it came over UDP or over an ICE-TCP connection (RFC 6544): the same IP and port over
/// TCP is a different path, and what is sent to it goes down that connection. IPv4 is kept in
/// 4 bytes, IPv6 in 16, so the value is small, hashable and allocation-free to compare. The
/// media socket converts NIO's `SocketAddress` to and from this at the edge.
public struct TransportAddress: Hashable, Sendable, CustomStringConvertible {
    public enum Family: UInt8, Sendable { case ipv4 = 4, ipv6 = 6 }
    /// The transport a path runs on: datagrams on the media port, or RFC 4571 frames on a TCP
    /// connection accepted on the media TCP port.
    public enum Transport: UInt8, Sendable { case udp, tcp }

    public let family: Family
    public let transport: Transport
    /// Address bytes in network order: the first 4 (IPv4) or all 16 (IPv6) are meaningful.
    public let high: UInt64
    public let low: UInt64
    public let port: UInt16
    /// Which of the server's own addresses the peer's datagrams arrive at: ICE's "base" of the
    /// pair (RFC 8445 §5.1.1.1). A socket bound to a wildcard address answers from the address
    /// the kernel's routing picks, which on a host with several addresses (two IPv6 prefixes, an
    /// alias, 127.0.0.2) is not always the one the peer sent to, and a peer's ICE drops replies
    /// from an address it did not check. So the media socket numbers each local address it
    /// receives on (1…255), tags sources with it, and sends from that address again. 0: unknown,
    /// or the socket is bound to one address; the kernel picks. Part of the identity, as in ICE:
    /// one remote address reached through two local addresses is two paths.
    public let base: UInt8

    /// nil unless `bytes` holds exactly 4 or 16 bytes.
    public init?(bytes: [UInt8], port: UInt16, transport: Transport = .udp, base: UInt8 = 0) {
        self.transport = transport
        self.base = base
        switch bytes.count {
        case 4:
            family = .ipv4
            high = 0
            low = bytes.reduce(0) { $0 << 8 | UInt64($1) }
        case 16:
            family = .ipv6
            high = bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
            low = bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
        default:
            return nil
        }
        self.port = port
    }

    /// An address from its bytes as integers in host order (a socket address's fields): the
    /// reader's path, which builds no array per datagram. `ipv4`: the 4 bytes of an IPv4
    /// address; otherwise `high` and `low` hold the 16 bytes of an IPv6 address.
    public init(ipv4: UInt32, port: UInt16, transport: Transport = .udp, base: UInt8 = 0) {
        family = .ipv4
        high = 0
        low = UInt64(ipv4)
        self.port = port
        self.transport = transport
        self.base = base
    }

    public init(ipv6High high: UInt64, low: UInt64, port: UInt16, transport: Transport = .udp, base: UInt8 = 0) {
        family = .ipv6
        self.high = high
        self.low = low
        self.port = port
        self.transport = transport
        self.base = base
    }

    /// The peer address an IPv6 socket reports. An IPv4 peer of a dual-stack socket shows as
    /// ::ffff:a.b.c.d (RFC 4291 §2.5.5.2): it is an IPv4 peer, and STUN must tell it its IPv4
    /// address.
    public init(socketIPv6High high: UInt64, low: UInt64, port: UInt16, transport: Transport = .udp, base: UInt8 = 0) {
        if high == 0, low >> 32 == 0xFFFF {
            self.init(ipv4: UInt32(truncatingIfNeeded: low), port: port, transport: transport, base: base)
        } else {
            self.init(ipv6High: high, low: low, port: port, transport: transport, base: base)
        }
    }

    /// The address bytes in network order (4 or 16).
    public var bytes: [UInt8] {
        switch family {
        case .ipv4: return (0..<4).map { UInt8(truncatingIfNeeded: low >> (24 - 8 * UInt64($0))) }
        case .ipv6:
            return (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64($0))) }
                + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64($0))) }
        }
    }

    /// Parses dotted IPv4 ("192.0.2.1"); IPv6 text is parsed at the edge with the system's inet_pton.
    public init?(ipv4 text: String, port: UInt16, transport: Transport = .udp) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard part.count <= 3, let value = UInt8(part) else { return nil }
            bytes.append(value)
        }
        self.init(bytes: bytes, port: port, transport: transport)
    }

    /// The address alone: dotted IPv4, or IPv6 as eight hexadecimal groups.
    public var host: String {
        switch family {
        case .ipv4: return bytes.map(String.init).joined(separator: ".")
        case .ipv6:
            let words = stride(from: 0, to: 16, by: 2).map { i in String(UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]), radix: 16) }
            return words.joined(separator: ":")
        }
    }

    public var description: String {
        let suffix = (transport == .tcp ? "/tcp" : "") + (base == 0 ? "" : " via local #\(base)")
        switch family {
        case .ipv4: return host + ":\(port)" + suffix
        case .ipv6: return "[" + host + "]:\(port)" + suffix
        }
    }
}

/// Monotonic time handed to the sans-IO protocol engines: nanoseconds from an arbitrary origin.
/// Engines never read a clock; their owner passes `now` in, and tests pass a simulated one.
public struct MediaTime: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    public static func milliseconds(_ ms: UInt64) -> MediaTime { MediaTime(nanoseconds: ms * 1_000_000) }
    public static func seconds(_ s: UInt64) -> MediaTime { MediaTime(nanoseconds: s * 1_000_000_000) }

    public static func < (lhs: MediaTime, rhs: MediaTime) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// `self + duration`, saturating instead of overflowing.
    public func adding(nanoseconds delta: UInt64) -> MediaTime {
        MediaTime(nanoseconds: nanoseconds.addingReportingOverflow(delta).overflow ? .max : nanoseconds + delta)
    }

    public func adding(milliseconds delta: UInt64) -> MediaTime { adding(nanoseconds: delta &* 1_000_000) }

    /// Nanoseconds from `earlier` to `self`, 0 when `earlier` is later.
    public func nanoseconds(since earlier: MediaTime) -> UInt64 {
        nanoseconds >= earlier.nanoseconds ? nanoseconds - earlier.nanoseconds : 0
    }

    public var description: String { "\(Double(nanoseconds) / 1e9)s" }
}

import Dispatch

extension MediaTime {
    /// The monotonic clock. Only edges (the socket, a room's timer handler) read it; protocol
    /// engines get `now` passed in.
    public static func now() -> MediaTime {
        MediaTime(nanoseconds: DispatchTime.now().uptimeNanoseconds)
    }
}
