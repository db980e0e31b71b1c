import ChorusCore
import Foundation
import Glibc
import Logging
import Testing

@testable import MediaSocket

/// The media port's writes go straight from the caller's thread with sendmmsg
/// (`DirectDatagramWriter`): every datagram of a batch must arrive whole and in order, past the
/// 64-per-call chunk, and a destination the socket cannot reach must cost only that datagram.
@Suite("Media socket: direct batched sends")
struct MediaSocketSendTests {
    /// A plain IPv4 UDP socket on loopback that collects what arrives (2 s receive timeout).
    final class Receiver {
        let descriptor: Int32
        let port: UInt16

        init() throws {
            let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
            }
            try #require(descriptor >= 0 && bound == 0)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            self.descriptor = descriptor
            port = UInt16(bigEndian: address.sin_port)
            var timeout = timeval(tv_sec: 2, tv_usec: 0)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var buffer: Int32 = 4 << 20
            _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &buffer, socklen_t(MemoryLayout<Int32>.size))
        }

        deinit { close(descriptor) }

        /// Datagrams received until `count` arrived or nothing came for 2 s.
        func receive(_ count: Int) -> [[UInt8]] {
            var received: [[UInt8]] = []
            var buffer = [UInt8](repeating: 0, count: 2_048)
            while received.count < count {
                let length = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                guard length >= 0 else { break }
                received.append(Array(buffer[0..<length]))
            }
            return received
        }
    }

    @Test func aBatchArrivesWholeAndInOrderAndAnUnreachableDestinationCostsOnlyItself() async throws {
        let socket = MediaSocket(host: "127.0.0.1", port: 0, router: DatagramRouter(), logger: Logger(label: "test"))
        try await socket.bind()
        let receiver = try Receiver()
        let destination = try #require(TransportAddress(ipv4: "127.0.0.1", port: receiver.port))
        let unreachable = try #require(TransportAddress(bytes: Array(repeating: 0x20, count: 16), port: 9))
        // 150 datagrams (three sendmmsg chunks) of different sizes, one of them to an IPv6
        // address this IPv4 socket cannot send to.
        var batch: [(datagram: [UInt8], destination: TransportAddress)] = []
        for index in 0..<150 {
            let datagram = [UInt8(index)] + Array(repeating: UInt8(truncatingIfNeeded: index * 7), count: 20 + index * 7)
            batch.append((datagram, index == 70 ? unreachable : destination))
        }
        socket.send(batch: batch)
        socket.send([0xFF, 1, 2, 3], to: destination)
        let received = receiver.receive(150)
        let expected = batch.enumerated().filter { $0.offset != 70 }.map(\.element.datagram) + [[0xFF, 1, 2, 3]]
        #expect(received.count == 150)
        #expect(received == expected)
    }

    /// A read's forwards come out interleaved: each packet of a frame to every subscriber in turn.
    /// The datagrams to one subscriber leave as segmented messages (equal sizes, the last shorter)
    /// and must arrive as the same datagrams, whole and in order; a longer one after a shorter one
    /// starts a new message, and a batch larger than a window (64) spans two.
    @Test func aFramesPacketsToEachSubscriberLeaveCoalescedAndArriveAsTheSameDatagrams() throws {
        let sender = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        try #require(sender >= 0)
        defer { close(sender) }
        let writer = try DirectDatagramWriter(duplicating: sender, isIPv6: false)
        let receivers = try (0..<4).map { _ in try Receiver() }
        let destinations = try receivers.map { try #require(TransportAddress(ipv4: "127.0.0.1", port: $0.port)) }
        // Five frames: three of 1,100 + 1,100 + 300, then 200 + 900 (longer after shorter),
        // then 40 packets of 1,000 (past one window).
        let sizes = [[1_100, 1_100, 300], [1_100, 1_100, 300], [200, 900], [1_100, 1_100, 300],
                     Array(repeating: 1_000, count: 40)]
        var batch: [(datagram: [UInt8], destination: TransportAddress)] = []
        var expected = Array(repeating: [[UInt8]](), count: receivers.count)
        var serial = 0
        for frame in sizes {
            for size in frame {
                for (index, destination) in destinations.enumerated() {
                    serial += 1
                    let datagram = [UInt8(index), UInt8(truncatingIfNeeded: serial), UInt8(truncatingIfNeeded: serial >> 8)]
                        + Array(repeating: UInt8(truncatingIfNeeded: serial &* 31), count: size - 3)
                    batch.append((datagram, destination))
                    expected[index].append(datagram)
                }
            }
        }
        let sent = writer.send(batch: batch)
        for (index, receiver) in receivers.enumerated() {
            let received = receiver.receive(expected[index].count)
            #expect(received.map(\.count) == expected[index].map(\.count), "receiver \(index)'s sizes")
            let differing = zip(received, expected[index]).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            #expect(received == expected[index], "receiver \(index)'s datagrams differ first at \(differing.map(String.init) ?? "the end")")
        }
        // Every datagram but the 200- and 900-byte ones travelled in a segmented message (each of
        // those is followed by a longer one, which starts a new message).
        #expect(sent == DirectDatagramWriter.Sent(datagrams: batch.count, coalesced: batch.count - 2 * receivers.count))
    }

    /// Whether this machine has IPv6 on loopback (a dual-stack socket needs it).
    static var hasIPv6Loopback: Bool {
        ((try? String(contentsOfFile: "/proc/net/if_inet6", encoding: .utf8)) ?? "").contains(" lo")
    }

    /// Bound to "::", the port is dual-stack: IPv4 peers are written as ::ffff:a.b.c.d.
    @Test(.enabled(if: hasIPv6Loopback, "needs IPv6 on loopback"))
    func aDualStackPortReachesIPv4PeersThroughMappedAddresses() async throws {
        let socket = MediaSocket(host: "::", port: 0, router: DatagramRouter(), logger: Logger(label: "test"))
        try await socket.bind()
        let receiver = try Receiver()
        let destination = try #require(TransportAddress(ipv4: "127.0.0.1", port: receiver.port))
        socket.send(batch: [([1, 2, 3], destination), ([4, 5], destination)])
        #expect(receiver.receive(2) == [[1, 2, 3], [4, 5]])
    }
}
