import Auth
import ChorusCore
import ControlAPI
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import Rooms
import Storage

/// A clock tests can move (token expiry, timestamp skew).
final class TestClock: Sendable {
    private let box = NIOLockedValueBox(Date())
    var now: Date { box.withLockedValue { $0 } }
    func advance(_ seconds: TimeInterval) { box.withLockedValue { $0 += seconds } }
}

/// The real control API on a real HTTP listener at 127.0.0.1 (port chosen by the kernel), over a
/// real SQLite file, with one application whose key and secret are fixed so that tests can use
/// signatures computed independently.
final class TestServer: Sendable {
    static let appKey = "3414cb6d-9f4a-406a-a52e-b2ef14380668"
    static let appSecret = "4/hSWjjY6CVZ/x3aJQFJVg=="

    let api: ControlAPI
    let database: any ChorusStore
    let application: ApplicationRecord
    let clock: TestClock
    let port: Int
    private let task: Task<Void, any Error>

    /// The temporary folder of the database file, removed by `stop`.
    let directory: URL

    private init(api: ControlAPI, database: any ChorusStore, application: ApplicationRecord, clock: TestClock,
                 port: Int, task: Task<Void, any Error>, directory: URL) {
        self.directory = directory
        self.api = api
        self.database = database
        self.application = application
        self.clock = clock
        self.port = port
        self.task = task
    }

    static func start(rateLimit: Double? = nil, idleTimeout: Duration? = nil) async throws -> TestServer {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-api-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let database = try SQLiteStore(path: dir.appendingPathComponent("api.sqlite").path)
        let application = try await database.insertApplication(ApplicationRecord(
            key: try ApplicationKey(validating: appKey), secret: appSecret, name: "test", createdAt: Date()))
        let clock = TestClock()
        var config = ControlAPIConfiguration()
        config.rateLimitPerSecond = rateLimit
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let api = try await ControlAPI(database: database, registry: RoomRegistry(logger: logger),
                                       configuration: config, prometheus: Observability.prometheus(),
                                       clock: { clock.now })
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: api.makeRouter(),
            server: ControlAPI.httpServer(idleTimeout: idleTimeout),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) },
            logger: logger)
        let task = Task { try await app.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        return TestServer(api: api, database: database, application: application, clock: clock, port: port,
                          task: task, directory: dir)
    }

    /// Stops the server and removes its database folder.
    func stop() async {
        task.cancel()
        _ = await task.result
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs `body` against a fresh server and stops it afterwards.
    static func with(rateLimit: Double? = nil, idleTimeout: Duration? = nil,
                     _ body: (TestServer) async throws -> Void) async throws {
        let server = try await start(rateLimit: rateLimit, idleTimeout: idleTimeout)
        do {
            try await body(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    // MARK: HTTP

    struct Reply {
        var status: Int
        var headers: [String: String]
        var body: Data

        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
        var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
        var message: String? { (json["error"] as? [String: Any])?["message"] as? String }
        func header(_ name: String) -> String? {
            headers.first { $0.key.lowercased() == name.lowercased() }?.value
        }
    }

    static var basic: String {
        "Basic " + Data("\(appKey):\(appSecret)".utf8).base64EncodedString()
    }

    /// One HTTP/1.1 exchange over a fresh TCP connection (`Connection: close`). A raw client on
    /// purpose: URLSession on Linux stalls on 401 challenges and normalises headers.
    func request(_ method: String, _ path: String, json: Any? = nil, body: Data? = nil,
                 headers: [String: String] = [:], auth: String? = TestServer.basic) async throws -> Reply {
        var fields = headers
        var payload = body ?? Data()
        if let json {
            payload = try JSONSerialization.data(withJSONObject: json)
            fields["Content-Type"] = fields["Content-Type"] ?? "application/json"
        }
        if let auth { fields["Authorization"] = auth }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        head += "Content-Length: \(payload.count)\r\n"
        for (name, value) in fields { head += "\(name): \(value)\r\n" }
        let bytes = Data((head + "\r\n").utf8) + payload
        let port = self.port
        // A thread of its own: blocking in recv on the cooperative pool (2 threads here) would
        // starve the server under test, whose handlers run on that same pool.
        let raw: Data = try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try RawHTTP.exchange(port: port, bytes: bytes) }) }.start()
        }
        return try RawHTTP.parse(raw)
    }

    /// Registers `user` with the application's secret and returns the access token.
    func register(_ user: String, sequence: UInt64) async throws -> String {
        let signature = RegistrationSignature.sign(
            userId: try UserID(validating: user), applicationKey: try ApplicationKey(validating: Self.appKey),
            sequence: RegistrationSequence(sequence), applicationSecret: Self.appSecret)
        let reply = try await request(
            "POST", "/v1/users/\(user)/registrations",
            json: ["applicationKey": Self.appKey, "sequence": String(sequence), "signature": signature], auth: nil)
        return reply.json["accessToken"] as? String ?? ""
    }

    /// Stores a call directly (joins arrive with the media layer).
    func insertCall(user: String, room: String = "room1") async throws -> CallRecord {
        try await database.insertCall(CallRecord(
            callId: ApplicationCredentials.newCallID().rawValue, applicationId: application.id!, roomId: room,
            userId: user, displayName: nil, joinedAt: clock.now))
    }
}

/// Blocking socket I/O for `TestServer.request`, run on a thread of its own.
enum RawHTTP {
    struct Failure: Error { var what: String }

    static func exchange(port: Int, bytes: Data) throws -> Data {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(what: "socket") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw Failure(what: "connect") }
        bytes.withUnsafeBytes { buffer in
            var sent = 0
            while sent < buffer.count {
                let n = send(fd, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
                // The server may answer (413) and close before reading everything: stop sending.
                if n <= 0 { break }
                sent += n
            }
        }
        var response = Data()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { break }
            response.append(contentsOf: chunk[0..<n])
        }
        return response
    }

    static func parse(_ raw: Data) throws -> TestServer.Reply {
        guard let split = raw.range(of: Data("\r\n\r\n".utf8)) else { throw Failure(what: "no header end") }
        let head = String(decoding: raw[..<split.lowerBound], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw Failure(what: "status line") }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Data(raw[split.upperBound...])
        if headers["transfer-encoding"] == "chunked" { body = dechunk(body) }
        return TestServer.Reply(status: status, headers: headers, body: body)
    }

    static func dechunk(_ data: Data) -> Data {
        var out = Data()
        var rest = data[...]
        while let lineEnd = rest.range(of: Data("\r\n".utf8)) {
            let sizeText = String(decoding: rest[..<lineEnd.lowerBound], as: UTF8.self)
            guard let size = Int(sizeText, radix: 16), size > 0 else { break }
            let start = lineEnd.upperBound
            out.append(rest[start..<start + size])
            rest = rest[(start + size + 2)...]
        }
        return out
    }
}
