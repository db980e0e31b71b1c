import ChorusCore
import Glibc
import NIOConcurrencyHelpers
import NIOCore

/// The server's own addresses that datagrams arrived at on a media socket bound to a wildcard
/// address, numbered 1…255 in order of first arrival: the `base` a source `TransportAddress`
/// carries, and the address `DirectDatagramWriter` sends from again (see
/// `TransportAddress.base` for why). The reader (the event loop) adds and looks up; writers
/// (rooms' queues) read a snapshot. A host has a handful of addresses, so a short array under a
/// lock is enough; past 255 (only broadcast or multicast destinations could get there), a
/// source gets base 0 and the kernel picks as before. `Sendable`: its one stored property is a
/// `NIOLockedValueBox`.
final class LocalAddressTable: Sendable {
    /// One local address as the socket's family writes it: 16 bytes for an IPv6 socket
    /// (IPv4-mapped for IPv4), the first 4 for an IPv4 socket.
    struct Entry: Equatable, Sendable {
        var bytes: (UInt64, UInt64)
        /// The receiving interface, kept only for link-local IPv6 (fe80::/10), which is
        /// ambiguous without it.
        var interface: UInt32

        static func == (lhs: Entry, rhs: Entry) -> Bool {
            lhs.bytes == rhs.bytes && lhs.interface == rhs.interface
        }
    }

    private let entries = NIOLockedValueBox<[Entry]>([])

    /// The base number of the local address a datagram arrived at; 0 when it cannot be told.
    func base(for info: NIOPacketInfo?) -> UInt8 {
        guard let info, let entry = Self.entry(info) else { return 0 }
        return entries.withLockedValue { entries in
            if let index = entries.firstIndex(of: entry) { return UInt8(index + 1) }
            guard entries.count < 255 else { return 0 }
            entries.append(entry)
            return UInt8(entries.count)
        }
    }

    /// The addresses numbered so far, index `base - 1`.
    func snapshot() -> [Entry] {
        entries.withLockedValue { $0 }
    }

    private static func entry(_ info: NIOPacketInfo) -> Entry? {
        switch info.destinationAddress {
        case .v4(let v4):
            let raw = UInt32(bigEndian: v4.address.sin_addr.s_addr)
            return Entry(bytes: (UInt64(raw) << 32, 0), interface: 0)
        case .v6(let v6):
            var storage = v6.address.sin6_addr
            let (high, low) = withUnsafeBytes(of: &storage) {
                (UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                 UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
            }
            let linkLocal = high >> 54 == 0x3FA  // fe80::/10
            return Entry(bytes: (high, low), interface: linkLocal ? UInt32(clamping: info.interfaceIndex) : 0)
        default:
            return nil
        }
    }
}
