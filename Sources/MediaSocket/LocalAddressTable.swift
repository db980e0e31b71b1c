import CUDP
import ChorusCore
import Glibc
import NIOConcurrencyHelpers

/// The server's own addresses that datagrams arrived at on a media socket bound to a wildcard
/// address, numbered 1…255 in order of first arrival: the `base` a source `TransportAddress`
/// carries, and the address `DirectDatagramWriter` sends from again (see
/// `TransportAddress.base` for why). The reader (`MediaReader`) adds and looks up; writers
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

    /// The base number of the local address a datagram arrived at (`MediaReader`'s packet
    /// information); 0 when it cannot be told.
    func base(for entry: Entry?) -> UInt8 {
        guard let entry else { return 0 }
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
}

extension LocalAddressTable.Entry {
    /// The local address of a datagram `chorus_udp_receive_batch` read, if the kernel gave one.
    init?(_ received: chorus_udp_received) {
        let (high, low) = (received.local_high, received.local_low)
        switch received.local_family {
        case 4:
            self.init(bytes: (high, 0), interface: 0)
        case 6:
            let linkLocal = high >> 54 == 0x3FA  // fe80::/10
            self.init(bytes: (high, low), interface: linkLocal ? received.local_interface : 0)
        default:
            return nil
        }
    }
}
