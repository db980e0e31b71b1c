import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The few REST calls the generator makes (register a user, create a room, join, leave), as
/// one HTTP/1.1 exchange per request over a fresh TCP connection (`Connection: close`) on a
/// thread of its own. A raw client on purpose: URLSession on Linux stalls on 401 challenges,
/// and blocking reads on the cooperative pool would starve the rest of the process.
struct LoadHTTP: Sendable {
    struct Reply: Sendable {
        var status: Int
        var body: Data
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// `http://host:port` (IPv4 literal or `localhost`); TLS is for a proxy in front, not here.
    let host: String
    let port: Int

    init(url: String) throws {
        guard let components = URLComponents(string: url), components.scheme == "http",
              let host = components.host else { throw Failure(description: "expected http://host:port, got \(url)") }
        self.host = host == "localhost" ? "127.0.0.1" : host
        port = components.port ?? 80
    }

    /// One exchange; `timeout` bounds the wait for the reply (a long poll needs more than 30 s).
    func request(_ method: String, _ path: String, json: [String: Any]? = nil, authorization: String? = nil,
                 timeout: Int = 30) async throws -> Reply
    {
        try await request(method, path, body: json.map { try JSONSerialization.data(withJSONObject: $0) },
                          authorization: authorization, timeout: timeout)
    }

    /// The same with the JSON body already serialized (what an actor can send across).
    func request(_ method: String, _ path: String, body: Data?, authorization: String? = nil,
                 timeout: Int = 30) async throws -> Reply
    {
        let payload = body ?? Data()
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n"
        if body != nil { head += "Content-Type: application/json\r\n" }
        head += "Content-Length: \(payload.count)\r\n"
        if let authorization { head += "Authorization: \(authorization)\r\n" }
        let bytes = Data((head + "\r\n").utf8) + payload
        let (host, port) = (self.host, self.port)
        // A server's rate limit (429) is waited out, a little longer each time.
        for attempt in 1...8 {
            let raw: Data = try await withCheckedThrowingContinuation { continuation in
                Thread {
                    continuation.resume(with: Result {
                        try Self.exchange(host: host, port: port, bytes: bytes, timeout: timeout)
                    })
                }
                    .start()
            }
            let reply = try Self.parse(raw)
            guard reply.status == 429, attempt < 8 else { return reply }
            try await Task.sleep(nanoseconds: UInt64(attempt) * 250_000_000)
        }
        throw Failure(description: "unreachable")
    }

    static func basic(key: String, secret: String) -> String {
        "Basic " + Data("\(key):\(secret)".utf8).base64EncodedString()
    }

    /// The local IPv4 address the kernel would use towards `host`: a connected UDP socket
    /// sends nothing, but `getsockname` then tells the route's source address.
    static func localAddress(toward host: String) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var remote = try ipv4(host, port: 9)
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "no route to \(host): errno \(errno)") }
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        guard named == 0, inet_ntop(AF_INET, &local.sin_addr, &text, socklen_t(text.count)) != nil else {
            throw Failure(description: "getsockname: errno \(errno)")
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func ipv4(_ host: String, port: Int) throws -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw Failure(description: "not an IPv4 address: \(host)")
        }
        return address
    }

    private static func exchange(host: String, port: Int, bytes: Data, timeout seconds: Int) throws -> Data {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = try ipv4(host, port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect to \(host):\(port): errno \(errno)") }
        try bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var sent = 0
            while sent < buffer.count {
                let count = send(fd, base + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
                guard count > 0 else { throw Failure(description: "send: errno \(errno)") }
                sent += count
            }
        }
        var response = Data()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { break }
            response.append(contentsOf: chunk[0..<count])
        }
        return response
    }

    private static func parse(_ raw: Data) throws -> Reply {
        guard let split = raw.range(of: Data("\r\n\r\n".utf8)) else { throw Failure(description: "no HTTP response") }
        let head = String(decoding: raw[..<split.lowerBound], as: UTF8.self)
        let statusLine = head.prefix { $0 != "\r" }.split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw Failure(description: "bad status line") }
        var body = Data(raw[split.upperBound...])
        if head.lowercased().contains("transfer-encoding: chunked") { body = dechunk(body) }
        return Reply(status: status, body: body)
    }

    private static func dechunk(_ data: Data) -> Data {
        var out = Data()
        var rest = data[...]
        while let lineEnd = rest.range(of: Data("\r\n".utf8)) {
            let sizeText = String(decoding: rest[..<lineEnd.lowerBound], as: UTF8.self)
            guard let size = Int(sizeText, radix: 16), size > 0, lineEnd.upperBound + size <= rest.endIndex else { break }
            out.append(rest[lineEnd.upperBound..<(lineEnd.upperBound + size)])
            rest = rest[min(rest.endIndex, lineEnd.upperBound + size + 2)...]
        }
        return out
    }
}
