import ChorusCore
import ChorusTestSupport
import Glibc
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import MediaSocket

/// The media port's own recvmmsg reader (`MediaReader`): what it hands the rooms must be every
/// datagram, in order, with its true source, across reads of 64; what it cannot hold whole is
/// dropped, not cut.
@Suite("Media socket: the reader thread")
struct MediaReaderTests {
    /// Records every datagram routed to it, and the size of each hand-over.
    final class Recorder: DatagramReceiver {
        let datagrams = NIOLockedValueBox<[ReceivedDatagram]>([])
        let handOvers = NIOLockedValueBox<[Int]>([])
        func receive(_ batch: ArraySlice<ReceivedDatagram>, readerIsLight: Bool) {
            datagrams.withLockedValue { $0.append(contentsOf: batch) }
            handOvers.withLockedValue { $0.append(batch.count) }
        }

        /// Waits (see `eventually`) for `count` datagrams; returns what arrived.
        func wait(for count: Int) async throws -> [ReceivedDatagram] {
            try await eventually { datagrams.withLockedValue { $0.count >= count } }
            return datagrams.withLockedValue { $0 }
        }
    }

    /// An RTP-shaped datagram from SSRC 7 carrying `index` (so the router finds the recorder).
    static func rtp(_ index: Int, padding: Int = 4) -> [UInt8] {
        [0x80, 111, UInt8(index >> 8), UInt8(index & 0xFF), 0, 0, 0, 0, 0, 0, 0, 7] + [UInt8](repeating: 0xAB, count: padding)
    }

    func boundSocket(host: String) async throws -> (MediaSocket, Recorder, UInt16) {
        let router = DatagramRouter()
        let recorder = Recorder()
        router.register(ssrc: SSRC(7), receiver: recorder)
        let socket = MediaSocket(host: host, port: 0, router: router, logger: Logger(label: "test"))
        let port = UInt16(try await socket.bind())
        return (socket, recorder, port)
    }

    /// 300 datagrams sent at once take several reads of at most 64: all arrive, in order, with
    /// their bytes and the peer's address. Fails if a read's tail or a batch boundary is lost.
    @Test func aBurstLongerThanOneReadArrivesWholeAndInOrder() async throws {
        let (socket, recorder, port) = try await boundSocket(host: "127.0.0.1")
        defer { Task { await socket.closeAll() } }
        let peer = try MediaSocketBaseTests.Peer()
        let sent = (0..<300).map { Self.rtp($0, padding: $0 % 50) }
        for datagram in sent { peer.send(datagram, to: "127.0.0.1", port: port) }
        let received = try await recorder.wait(for: 300)
        #expect(received.map(\.datagram) == sent)
        let source = try #require(received.first?.source)
        #expect(source.host == "127.0.0.1" && source.family == .ipv4 && source.base == 0)
        #expect(received.allSatisfy { $0.source == source })
        #expect(recorder.handOvers.withLockedValue { $0.allSatisfy { $0 <= MediaReader.batch } })
    }

    /// A datagram longer than a read slot is dropped whole (never handed over cut short); the
    /// next one arrives.
    @Test func anOversizedDatagramIsDroppedAndTheNextArrives() async throws {
        let (socket, recorder, port) = try await boundSocket(host: "127.0.0.1")
        defer { Task { await socket.closeAll() } }
        let peer = try MediaSocketBaseTests.Peer()
        peer.send(Self.rtp(1, padding: MediaReader.slotSize), to: "127.0.0.1", port: port)
        peer.send(Self.rtp(2), to: "127.0.0.1", port: port)
        let received = try await recorder.wait(for: 1)
        try await Task.sleep(for: .milliseconds(50))
        #expect(recorder.datagrams.withLockedValue { $0.map(\.datagram) } == [Self.rtp(2)])
        #expect(received.count == 1)
    }

    /// After `closeAll`, the reader thread is gone: nothing more is handed over.
    @Test func aClosedSocketHandsNothingOver() async throws {
        let (socket, recorder, port) = try await boundSocket(host: "127.0.0.1")
        let peer = try MediaSocketBaseTests.Peer()
        peer.send(Self.rtp(1), to: "127.0.0.1", port: port)
        #expect(try await recorder.wait(for: 1).count == 1)
        await socket.closeAll()
        peer.send(Self.rtp(2), to: "127.0.0.1", port: port)
        try await Task.sleep(for: .milliseconds(100))
        #expect(recorder.datagrams.withLockedValue { $0.count } == 1)
    }

    /// An IPv6 peer's source is its IPv6 address and port.
    @Test(.enabled(if: MediaSocketSendTests.hasIPv6Loopback, "needs IPv6 on loopback"))
    func anIPv6PeerIsSeenAtItsAddress() async throws {
        let (socket, recorder, port) = try await boundSocket(host: "::1")
        defer { Task { await socket.closeAll() } }
        let descriptor = Glibc.socket(AF_INET6, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        _ = inet_pton(AF_INET6, "::1", &address.sin6_addr)
        let datagram = Self.rtp(9)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { destination in
                datagram.withUnsafeBytes {
                    sendto(descriptor, $0.baseAddress, $0.count, 0, destination, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
        let received = try await recorder.wait(for: 1)
        let source = try #require(received.first?.source)
        #expect(source.family == .ipv6 && source.bytes == [UInt8](repeating: 0, count: 15) + [1])
        #expect(source.port != 0 && received.first?.datagram == datagram)
    }
}
