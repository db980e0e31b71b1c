import ChorusCore
import ChorusTestSupport
import Glibc
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import MediaSocket

/// On a socket bound to a wildcard address, each reply must leave from the local address its
/// peer sent to (ICE's base), not from the one the kernel's routing would pick: on loopback,
/// a datagram to 127.0.0.2 is answered from 127.0.0.1 by default, and a peer's ICE drops
/// that reply. These tests fail without IP_PKTINFO / IPV6_PKTINFO on the send path.
@Suite("Media socket: replies leave from the address the peer sent to")
struct MediaSocketBaseTests {
    /// Records the source of each datagram routed to it.
    final class Recorder: DatagramReceiver {
        let sources = NIOLockedValueBox<[TransportAddress]>([])
        func receive(_ datagrams: ArraySlice<ReceivedDatagram>, readerIsLight: Bool) {
            sources.withLockedValue { $0.append(contentsOf: datagrams.map(\.source)) }
        }
    }

    /// A blocking IPv4 UDP socket on 127.0.0.1 (2 s receive timeout).
    final class Peer {
        let descriptor: Int32

        init() throws {
            descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            var address = Self.address("127.0.0.1", port: 0)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            try #require(descriptor >= 0 && bound == 0)
            var timeout = timeval(tv_sec: 2, tv_usec: 0)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit { close(descriptor) }

        static func address(_ text: String, port: UInt16) -> sockaddr_in {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            _ = inet_pton(AF_INET, text, &address.sin_addr)
            return address
        }

        func send(_ bytes: [UInt8], to host: String, port: UInt16) {
            var address = Self.address(host, port: port)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { destination in
                    bytes.withUnsafeBytes {
                        sendto(descriptor, $0.baseAddress, $0.count, 0, destination, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
        }

        /// The next datagram and the address it came from ("a.b.c.d"), or nil after 2 s.
        func receive() -> (bytes: [UInt8], from: String)? {
            var buffer = [UInt8](repeating: 0, count: 2_048)
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let count = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { source in
                    buffer.withUnsafeMutableBytes { recvfrom(descriptor, $0.baseAddress, $0.count, 0, source, &length) }
                }
            }
            guard count >= 0 else { return nil }
            let raw = UInt32(bigEndian: address.sin_addr.s_addr)
            let text = [raw >> 24, raw >> 16 & 0xFF, raw >> 8 & 0xFF, raw & 0xFF].map(String.init).joined(separator: ".")
            return (Array(buffer[0..<count]), text)
        }
    }

    /// An RTP-shaped datagram with sender SSRC `ssrc`, so the router finds the recorder by SSRC.
    static func rtp(ssrc: UInt32) -> [UInt8] {
        [0x80, 111, 0, 1, 0, 0, 0, 0] + withUnsafeBytes(of: ssrc.bigEndian) { Array($0) } + [1, 2, 3, 4]
    }

    /// Sends from one peer to 127.0.0.2 and to 127.0.0.3 on a socket bound to `host`, answers
    /// each source as recorded, and returns the addresses the answers came from.
    func answerSources(boundTo host: String) async throws -> (sources: [TransportAddress], repliesFrom: [String]) {
        let router = DatagramRouter()
        let recorder = Recorder()
        router.register(ssrc: SSRC(0xC0FFEE), receiver: recorder)
        let socket = MediaSocket(host: host, port: 0, router: router, logger: Logger(label: "test"))
        let port = UInt16(try await socket.bind())
        defer { Task { await socket.closeAll() } }
        let peer = try Peer()
        var replies: [String] = []
        for (index, host) in ["127.0.0.2", "127.0.0.3", "127.0.0.2"].enumerated() {
            peer.send(Self.rtp(ssrc: 0xC0FFEE), to: host, port: port)
            var source: TransportAddress?
            try await eventually {
                source = recorder.sources.withLockedValue { $0.count > index ? $0[index] : nil }
                return source != nil
            }
            socket.send([UInt8(index)], to: try #require(source))
            let reply = try #require(peer.receive())
            #expect(reply.bytes == [UInt8(index)])
            replies.append(reply.from)
        }
        return (recorder.sources.withLockedValue { $0 }, replies)
    }

    @Test func anIPv4WildcardSocketAnswersFromTheAddressThePeerSentTo() async throws {
        let (sources, replies) = try await answerSources(boundTo: "0.0.0.0")
        #expect(replies == ["127.0.0.2", "127.0.0.3", "127.0.0.2"])
        // Two local addresses, two bases; the same remote through each is a different path.
        #expect(sources.map(\.base) == [1, 2, 1])
        #expect(sources[0] != sources[1] && sources[0] == sources[2])
    }

    @Test(.enabled(if: MediaSocketSendTests.hasIPv6Loopback, "needs IPv6 on loopback"))
    func aDualStackWildcardSocketAnswersIPv4PeersFromTheAddressTheySentTo() async throws {
        let (sources, replies) = try await answerSources(boundTo: "::")
        #expect(replies == ["127.0.0.2", "127.0.0.3", "127.0.0.2"])
        #expect(sources.map(\.base) == [1, 2, 1])
        #expect(sources.allSatisfy { $0.family == .ipv4 })
    }

    /// Bound to one address, the kernel's choice is that address: no ancillary data, base 0.
    @Test func aSocketBoundToOneAddressLeavesTheSourceToTheKernel() async throws {
        let router = DatagramRouter()
        let recorder = Recorder()
        router.register(ssrc: SSRC(7), receiver: recorder)
        let socket = MediaSocket(host: "127.0.0.2", port: 0, router: router, logger: Logger(label: "test"))
        let port = UInt16(try await socket.bind())
        defer { Task { await socket.closeAll() } }
        let peer = try Peer()
        peer.send(Self.rtp(ssrc: 7), to: "127.0.0.2", port: port)
        var source: TransportAddress?
        try await eventually {
            source = recorder.sources.withLockedValue { $0.first }
            return source != nil
        }
        let recorded = try #require(source)
        #expect(recorded.base == 0)
        socket.send([9], to: recorded)
        #expect(peer.receive()?.from == "127.0.0.2")
    }
}
