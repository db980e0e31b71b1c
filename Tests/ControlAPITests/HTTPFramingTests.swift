import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// Malformed HTTP framing and clients that hold connections, over raw sockets: every framing
/// mistake is a 4xx with the API's JSON error body (never a 500 or a bare 400), a stream ends
/// when its client closes, and a connection that never completes a request is closed.
@Suite("REST: HTTP framing and connection hygiene")
struct HTTPFramingTests {
    static let registration = "POST /v1/users/u1/registrations HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"

    @Test func framingErrorsInsideABodyAre400s() async throws {
        try await TestServer.with { server in
            let notHex = try await server.raw(Self.registration + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
            #expect(notHex.status == 400 && notHex.errorCode == "malformedChunk")
            let overflow = try await server.raw(
                Self.registration + "Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n{}\r\n0\r\n\r\n")
            #expect(overflow.status == 400 && overflow.errorCode == "malformedChunk")
            // The client promises 100 bytes, sends 5 and closes its side.
            let short = try await server.raw(Self.registration + "Content-Length: 100\r\n\r\n{\"a\":", halfClose: true)
            #expect(short.status == 400 && short.errorCode == "incompleteBody")
        }
    }

    @Test func framingErrorsBeforeARequestAreJSON() async throws {
        try await TestServer.with { server in
            let big = String(repeating: "a", count: 100 * 1024)
            let headers = try await server.raw("GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: \(big)\r\n\r\n")
            #expect(headers.status == 431 && headers.errorCode == "headersTooLarge")
            #expect(headers.header("connection") == "close")
            let both = try await server.raw(
                Self.registration + "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
            #expect(both.status == 400 && both.errorCode == "malformedRequest")
            let twice = try await server.raw(Self.registration + "Content-Length: 2\r\nContent-Length: 5\r\n\r\n{}")
            #expect(twice.status == 400 && twice.errorCode == "malformedContentLength")
            let metrics = try await server.request("GET", "/metrics", auth: nil)
            #expect(String(decoding: metrics.body, as: UTF8.self).contains(#"code="headersTooLarge""#))
        }
    }

    @Test func anEventStreamEndsWhenItsClientCloses() async throws {
        try await TestServer.with { server in
            #expect(try await server.request("POST", "/v1/rooms", json: ["roomId": "sse"]).status == 201)
            let head = "GET /v1/rooms/sse/events HTTP/1.1\r\nHost: t\r\nAuthorization: \(TestServer.basic)\r\n\r\n"
            // Half-closing is how a closed client looks to the server (it allows half-closure);
            // the stream must end at once, not at the next keep-alive 15 s later (which a
            // half-closed client would even receive).
            let port = server.port
            let (status, seconds) = try await onThread { try RawSocket.streamThenHalfClose(port: port, head: head) }
            #expect(status == 200)
            #expect(seconds < 3, "the server held the stream \(seconds) s after its client closed")
        }
    }

    @Test func aConnectionThatNeverCompletesARequestIsClosed() async throws {
        try await TestServer.with(idleTimeout: .milliseconds(500)) { server in
            let port = server.port
            let seconds = try await onThread { try RawSocket.secondsUntilClosed(port: port, sending: "GET /heal") }
            #expect(seconds < 3, "a partial request held its connection \(seconds) s")
            #expect(try await server.request("GET", "/healthz", auth: nil).status == 200)
        }
    }
}

/// Runs blocking socket work on a thread of its own (not the cooperative pool the server uses).
func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

extension TestServer {
    /// Sends `text` as it is (no header added) and parses the answer; `halfClose` shuts the
    /// sending side down after it.
    func raw(_ text: String, halfClose: Bool = false) async throws -> Reply {
        let port = self.port
        let bytes = Data(text.utf8)
        return try RawHTTP.parse(try await onThread { try RawSocket.exchange(port: port, bytes: bytes, halfClose: halfClose) })
    }
}

/// Blocking client sockets with a receive timeout, for the framing tests.
enum RawSocket {
    static func connect(port: Int, timeoutSeconds: Int = 10) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTP.Failure(what: "socket") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            throw RawHTTP.Failure(what: "connect")
        }
        return fd
    }

    static func send(_ fd: Int32, _ bytes: Data) {
        bytes.withUnsafeBytes { buffer in
            var sent = 0
            while sent < buffer.count {
                let n = Glibc.send(fd, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
                if n <= 0 { break }  // the server answered and closed first
                sent += n
            }
        }
    }

    /// Reads until the server closes (or the receive timeout); what it read.
    static func readToEnd(_ fd: Int32, until marker: Data? = nil) -> Data {
        var response = Data()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { break }
            response.append(contentsOf: chunk[0..<n])
            if let marker, response.range(of: marker) != nil { break }
        }
        return response
    }

    static func exchange(port: Int, bytes: Data, halfClose: Bool) throws -> Data {
        let fd = try connect(port: port)
        defer { close(fd) }
        send(fd, bytes)
        if halfClose { shutdown(fd, Int32(SHUT_WR)) }
        return readToEnd(fd)
    }

    /// Opens a stream with `head`, reads its status, half-closes, and times the server's close.
    static func streamThenHalfClose(port: Int, head: String) throws -> (status: Int, seconds: Double) {
        let fd = try connect(port: port)
        defer { close(fd) }
        send(fd, Data(head.utf8))
        let start = readToEnd(fd, until: Data("\r\n\r\n".utf8))
        let status = Int(String(decoding: start.prefix(12).suffix(3), as: UTF8.self)) ?? 0
        let began = Date()
        shutdown(fd, Int32(SHUT_WR))
        _ = readToEnd(fd)
        return (status, Date().timeIntervalSince(began))
    }

    /// Sends the start of a request and never finishes it; seconds until the server closes.
    static func secondsUntilClosed(port: Int, sending text: String) throws -> Double {
        let fd = try connect(port: port)
        defer { close(fd) }
        let began = Date()
        send(fd, Data(text.utf8))
        _ = readToEnd(fd)
        return Date().timeIntervalSince(began)
    }
}
