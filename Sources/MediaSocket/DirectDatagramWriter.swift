import CUDP
import ChorusCore
import Glibc

/// Sends the media port's datagrams straight from the calling thread (a room's queue) with one
/// sendmmsg(2) per batch. Going through the NIO channel instead cost, per room tick, a task
/// hop onto the event loop (an eventfd write and a thread wake-up) and, per datagram, a
/// ByteBuffer copy and an envelope in the channel's pending-write queue: measured as the
/// largest share of a meeting room's CPU once the mix encode was gone.
///
/// It writes on its own descriptor of the socket NIO reads (a `dup`), so the kernel sees one
/// socket and one port, reads and writes proceed on different threads without a lock, and the
/// descriptor stays valid until this object is gone (closed in `deinit`: nothing can be
/// sending then), never reused under a late sender. A full send buffer drops the rest of the
/// batch instead of queueing it (late media is useless); the caller counts the drops.
/// On a wildcard-bound socket, a destination with a `base` is sent from that local address
/// (IP_PKTINFO / IPV6_PKTINFO ancillary data), the one its datagrams arrived at.
/// Immutable (a descriptor, a flag, a `Sendable` table) and sendmmsg(2) is thread-safe, so
/// plainly `Sendable`.
final class DirectDatagramWriter: Sendable {
    private let descriptor: Int32
    /// The socket's family: an IPv6 socket reaches IPv4 peers through mapped addresses.
    private let isIPv6: Bool
    /// The local addresses `base` numbers refer to; nil when the socket is bound to one address.
    private let locals: LocalAddressTable?

    init(duplicating socket: Int32, isIPv6: Bool, locals: LocalAddressTable? = nil) throws(WriterError) {
        let copy = dup(socket)
        guard copy >= 0 else { throw .duplicate(errno) }
        descriptor = copy
        self.isIPv6 = isIPv6
        self.locals = locals
    }

    deinit {
        close(descriptor)
    }

    enum WriterError: Error { case duplicate(Int32) }

    /// What a batch's send did: how many datagrams the kernel took, and how many of those left
    /// as segments of a coalesced message (UDP GSO: a frame's packets to one subscriber).
    struct Sent: Equatable {
        var datagrams = 0
        var coalesced = 0
    }

    /// Sends every datagram that can be sent (`chorus_udp_send_batch`).
    func send(batch: [Transmit]) -> Sent {
        guard !batch.isEmpty else { return Sent() }
        let addressStride = MemoryLayout<sockaddr_in6>.stride
        let descriptorStride = MemoryLayout<chorus_udp_datagram>.stride
        var payloadBytes = 0
        for item in batch { payloadBytes += item.datagram.count }
        // One allocation per batch: the descriptors, the addresses and a copy of the payloads.
        let size = batch.count * (descriptorStride + addressStride) + payloadBytes
        let storage = UnsafeMutableRawPointer.allocate(byteCount: max(size, 1), alignment: 16)
        defer { storage.deallocate() }
        let descriptors = storage.bindMemory(to: chorus_udp_datagram.self, capacity: batch.count)
        let addresses = storage + batch.count * descriptorStride
        var payload = addresses + batch.count * addressStride
        // One look at the table per batch, and only when some destination has a base.
        let bases = locals.flatMap { table in batch.contains { $0.destination.base != 0 } ? table.snapshot() : nil } ?? []
        var count = 0
        for item in batch {
            let address = addresses + count * addressStride
            guard let length = write(item.destination, to: address) else { continue }
            item.datagram.withUnsafeBytes { bytes in
                if let base = bytes.baseAddress { payload.copyMemory(from: base, byteCount: bytes.count) }
            }
            var datagram = chorus_udp_datagram()
            datagram.bytes = UnsafePointer(payload.assumingMemoryBound(to: UInt8.self))
            datagram.length = item.datagram.count
            datagram.address = UnsafeRawPointer(address)
            datagram.address_length = UInt32(length)
            setSource(of: &datagram, base: item.destination.base, from: bases)
            descriptors[count] = datagram
            payload += item.datagram.count
            count += 1
        }
        var coalesced = 0
        let sent = chorus_udp_send_batch(descriptor, descriptors, count, &coalesced)
        return Sent(datagrams: sent, coalesced: coalesced)
    }

    /// Fills in the local address numbered `base`, if there is one, for the socket's family.
    private func setSource(of datagram: inout chorus_udp_datagram, base: UInt8, from bases: [LocalAddressTable.Entry]) {
        guard base != 0, Int(base) <= bases.count else { return }
        let entry = bases[Int(base) - 1]
        datagram.source_family = isIPv6 ? 6 : 4
        datagram.source_interface = entry.interface
        withUnsafeMutableBytes(of: &datagram.source) {
            $0.storeBytes(of: entry.bytes.0.bigEndian, toByteOffset: 0, as: UInt64.self)
            $0.storeBytes(of: entry.bytes.1.bigEndian, toByteOffset: 8, as: UInt64.self)
        }
    }

    /// Writes the destination's sockaddr; returns its length, nil when the socket cannot reach it.
    private func write(_ destination: TransportAddress, to raw: UnsafeMutableRawPointer) -> Int? {
        switch (destination.family, isIPv6) {
        case (.ipv4, false):
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = destination.port.bigEndian
            address.sin_addr.s_addr = UInt32(truncatingIfNeeded: destination.low).bigEndian
            raw.storeBytes(of: address, as: sockaddr_in.self)
            return MemoryLayout<sockaddr_in>.size
        case (.ipv4, true), (.ipv6, true):
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = destination.port.bigEndian
            // IPv4 as ::ffff:a.b.c.d (RFC 4291 §2.5.5.2) on a dual-stack socket.
            let (high, low) = destination.family == .ipv6 ? (destination.high, destination.low)
                : (0, 0xFFFF_0000_0000 | destination.low)
            withUnsafeMutableBytes(of: &address.sin6_addr) {
                $0.storeBytes(of: high.bigEndian, toByteOffset: 0, as: UInt64.self)
                $0.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
            }
            raw.storeBytes(of: address, as: sockaddr_in6.self)
            return MemoryLayout<sockaddr_in6>.size
        case (.ipv6, false):
            return nil
        }
    }
}
