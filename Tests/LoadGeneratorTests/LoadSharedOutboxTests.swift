import Glibc
@testable import LoadGenerator
import Testing

/// A shared socket's outbox (`LoadSharedOutbox`): what one task of the loop queued leaves in one
/// batch, in order, each datagram from its own participant's loopback address, and the outbox
/// is empty afterwards.
@Suite("Load generator: a shared socket's batched sends")
struct LoadSharedOutboxTests {
    /// An IPv4 address and port as a sockaddr_in.
    func socketAddress(_ host: String, port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        _ = inet_pton(AF_INET, host, &address.sin_addr)
        return address
    }

    /// A UDP socket bound on `host` (sends with IP_PKTINFO from 127.x.y.z need 0.0.0.0), its port.
    func boundSocket(host: String = "0.0.0.0") throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        try #require(descriptor >= 0)
        var address = socketAddress(host, port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        try #require(bound)
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Reads one datagram (waiting up to a second): its bytes and the sender's IPv4 address.
    func receive(on descriptor: Int32) -> (bytes: [UInt8], from: String)? {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 1_000) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 2_048)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(descriptor, &buffer, 2_048, 0, $0, &length) }
        }
        guard count >= 0 else { return nil }
        let ip = UInt32(bigEndian: address.sin_addr.s_addr)
        return (Array(buffer[0..<count]), "\(ip >> 24).\(ip >> 16 & 0xFF).\(ip >> 8 & 0xFF).\(ip & 0xFF)")
    }

    @Test func queuedDatagramsLeaveInOrderEachFromItsOwnAddress() throws {
        let sender = try boundSocket()
        let receiver = try boundSocket(host: "127.0.0.1")
        defer { close(sender.descriptor); close(receiver.descriptor) }
        let destination = socketAddress("127.0.0.1", port: receiver.port)
        let outbox = LoadSharedOutbox()
        let sources = (0..<5).map { LoadSharedSocket.Address(index: $0 * 300) }
        let payloads: [[UInt8]] = (0..<5).map { index in (0..<(index * 37 + 1)).map { UInt8(truncatingIfNeeded: $0 &+ index) } }
        for (payload, source) in zip(payloads, sources) { outbox.add(payload, from: source, to: destination) }
        // An empty datagram between them keeps its place too.
        outbox.add([], from: sources[0], to: destination)
        outbox.send(on: sender.descriptor)
        var received: [(bytes: [UInt8], from: String)] = []
        while let datagram = receive(on: receiver.descriptor) {
            received.append(datagram)
            if received.count == 6 { break }
        }
        // Each source's datagrams arrive in their order, from that source. Different sources'
        // may be reordered: a batch's datagrams on one path leave together, so the empty one
        // follows the first (`chorus_udp_send_batch`).
        let sent = zip(payloads, sources.map(\.text)).map { (bytes: $0, from: $1) } + [(bytes: [], from: sources[0].text)]
        #expect(received.count == sent.count)
        for source in sources.map(\.text) {
            #expect(received.filter { $0.from == source }.map(\.bytes) == sent.filter { $0.from == source }.map(\.bytes))
        }
        // Sent and emptied: a second send sends nothing more.
        outbox.send(on: sender.descriptor)
        var poller = pollfd(fd: receiver.descriptor, events: Int16(POLLIN), revents: 0)
        #expect(poll(&poller, 1, 100) == 0)
    }
}
