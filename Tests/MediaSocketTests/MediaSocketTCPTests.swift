import ChorusCore
import ChorusTestSupport
import Foundation
import Glibc
import Logging
import NIOConcurrencyHelpers
import STUN
import Testing

@testable import MediaSocket

/// ICE-TCP at the media edge, over real sockets: RFC 4571 frames in any read pieces reach the
/// participant's receiver with a `.tcp` source, what the room sends to that address comes back
/// framed on the same connection, and a peer that stops reading costs dropped packets, never a
/// blocked sender.
@Suite("Media socket: ICE-TCP")
struct MediaSocketTCPTests {
    /// Records what the router hands it.
    final class Recorder: DatagramReceiver {
        let frames = NIOLockedValueBox<[(datagram: [UInt8], source: TransportAddress)]>([])
        func receive(_ datagrams: ArraySlice<ReceivedDatagram>, readerIsLight: Bool) {
            frames.withLockedValue { $0.append(contentsOf: datagrams.map { ($0.datagram, $0.source) }) }
        }
    }

    /// A blocking TCP client on loopback.
    final class Client {
        let descriptor: Int32
        init(port: Int, receiveBuffer: Int32? = nil) throws {
            descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            if var size = receiveBuffer {
                _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            address.sin_port = UInt16(port).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            try #require(connected == 0)
            var timeout = timeval(tv_sec: 2, tv_usec: 0)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        deinit { close(descriptor) }

        func write(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) } }

        /// Exactly `count` bytes, or fewer if nothing came for 2 s.
        func read(_ count: Int) -> [UInt8] {
            var out: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4_096)
            while out.count < count {
                let n = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, min($0.count, count - out.count), 0) }
                guard n > 0 else { break }
                out += buffer[0..<n]
            }
            return out
        }
    }

    static func bindingRequest(ufrag: String) -> [UInt8] {
        var builder = STUNMessageBuilder(type: .bindingRequest, transactionID: .random(), capacity: 64)
        builder.appendUsername(Array("\(ufrag):peer".utf8))
        builder.appendFingerprint()
        return builder.finish()
    }

    /// The limits with a first-check timeout long enough for a test run on a loaded machine:
    /// `make test` runs every suite at once on two cores, where a test's `Task.sleep` between
    /// connecting and sending its check has taken over 10 s, and the listener then closed the
    /// connection for sending no check in time (CI saw both).
    static var patientLimits: MediaTCPListener.Limits {
        var limits = MediaTCPListener.Limits()
        limits.firstCheckTimeout = .seconds(600)
        return limits
    }

    @Test func framesInAnyPiecesAreRoutedAndAnswersComeBackFramed() async throws {
        let router = DatagramRouter()
        let recorder = Recorder()
        router.register(ufrag: "tcpu", receiver: recorder)
        let socket = MediaSocket(host: "127.0.0.1", port: 0, tcpPort: .sameAsUDP, router: router, logger: Logger(label: "test"),
                                 tcpLimits: Self.patientLimits)
        let udpPort = try await socket.bind()
        let port = try #require(socket.boundTCPPort)
        #expect(port == udpPort)
        let client = try Client(port: port)
        let check = Self.bindingRequest(ufrag: "tcpu")
        let framed = [UInt8(check.count >> 8), UInt8(check.count & 0xFF)] + check
        // Split inside the length prefix, then the rest with a second (empty) frame coalesced.
        client.write(Array(framed[..<1]))
        try await Task.sleep(for: .milliseconds(20))
        client.write(Array(framed[1...]) + [0, 0])
        try await eventually { recorder.frames.withLockedValue { !$0.isEmpty } }
        let first = try #require(recorder.frames.withLockedValue { $0.first })
        #expect(first.datagram == check)
        #expect(first.source.transport == .tcp)
        #expect(first.source.bytes == [127, 0, 0, 1])

        // What the room sends to that address goes down the connection, framed, in order.
        let replies: [[UInt8]] = [[1, 2, 3], Array(repeating: 9, count: 1_200), [0x80, 0x60]]
        socket.send(batch: replies.map { ($0, first.source) })
        let expected = replies.flatMap { [UInt8($0.count >> 8), UInt8($0.count & 0xFF)] + $0 }
        #expect(client.read(expected.count) == expected)
        await socket.closeAll()
    }

    @Test func aPeerThatStopsReadingCostsDroppedPacketsNotABlockedSender() async throws {
        let router = DatagramRouter()
        let recorder = Recorder()
        router.register(ufrag: "slow", receiver: recorder)
        let socket = MediaSocket(host: "127.0.0.1", port: 0, tcpPort: .sameAsUDP, router: router, logger: Logger(label: "test"),
                                 tcpLimits: Self.patientLimits)
        try await socket.bind()
        let tcp = try #require(socket.tcp)
        let client = try Client(port: try #require(socket.boundTCPPort), receiveBuffer: 4_096)
        let check = Self.bindingRequest(ufrag: "slow")
        client.write([UInt8(check.count >> 8), UInt8(check.count & 0xFF)] + check)
        try await eventually { recorder.frames.withLockedValue { !$0.isEmpty } }
        let source = try #require(recorder.frames.withLockedValue { $0.first?.source })
        // 10,000 packets of 1,200 bytes (12 MB) at a peer that never reads: the kernel buffers
        // fill, then NIO's queue up to its high-water mark, then sends are refused at once.
        var queued = 0
        let packet = [UInt8](repeating: 0x80, count: 1_200)
        for _ in 0..<100 {
            queued += tcp.send(Array(repeating: packet, count: 100), to: source)
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(queued < 10_000, "every packet was queued for a peer that does not read")
        #expect(queued > 0)
        // The connection is still there: nothing was closed for being slow.
        #expect(tcp.connections.count == 1)
        _ = client
        await socket.closeAll()
    }

    /// The listener and all its connections share one event loop, so a connection over a limit
    /// is closed within the accept that made it rather than a hop later: under a flood on a
    /// loaded machine, the hop let hundreds of refused sockets stay open beyond the cap.
    /// The kept connections never send a check: the patient first-check timeout keeps them open
    /// however late the test looks.
    @Test func connectionsOverTheLimitAreClosedAndTheKeptOnesShareTheListenersLoop() async throws {
        let socket = MediaSocket(host: "127.0.0.1", port: 0, tcpPort: .sameAsUDP, router: DatagramRouter(),
                                 logger: Logger(label: "test"), tcpLimits: Self.patientLimits)
        try await socket.bind()
        let tcp = try #require(socket.tcp)
        let port = try #require(socket.boundTCPPort)
        // One after another from 127.0.0.1: the first 16 are kept, the rest refused.
        let clients = try (0..<(tcp.limits.perHostLimit + 4)).map { _ in try Client(port: port) }
        try await eventually { tcp.connections.count == tcp.limits.perHostLimit }
        #expect(tcp.connections.count == tcp.limits.perHostLimit)
        for client in clients[tcp.limits.perHostLimit...] {
            var byte: UInt8 = 0
            #expect(recv(client.descriptor, &byte, 1, 0) == 0, "a connection over the per-host limit was not closed")
        }
        let loops = Set(tcp.connections.all.map { ObjectIdentifier($0.eventLoop) })
        #expect(loops.count == 1)
        withExtendedLifetime(clients) {}
        await socket.closeAll()
    }
}
