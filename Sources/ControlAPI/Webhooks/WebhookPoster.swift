import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Posts one signed webhook and reports what came back: HTTP/1.1 over a fresh connection
/// (`Connection: close`), TLS for https, to an address the `OutboundAddressPolicy` allowed.
/// Redirects are not followed (a 3xx is a failed attempt), at most `responseLimit` bytes of
/// the response body are read, and the whole exchange must finish within `timeout`.
struct WebhookPoster: Sendable {
    static let responseLimit = 16 * 1024
    let group: any EventLoopGroup
    let policy: OutboundAddressPolicy
    var timeout: TimeAmount = .seconds(10)

    /// What one post ended with.
    enum Result: Sendable, Equatable {
        case status(Int, retryAfterSeconds: Int?)
        case failure(String)
    }

    func post(to url: WebhookURL, headers: [(String, String)], body: [UInt8]) async -> Result {
        let addresses: [ResolvedAddress]
        switch await policy.resolve(url.host, port: url.port) {
        case .success(let resolved): addresses = resolved
        case .failure(let refusal): return .failure(refusal.description)
        }
        guard let first = addresses.first, let address = try? SocketAddress(ipAddress: first.text, port: url.port) else {
            return .failure("\(url.host) has no usable address")
        }
        let tls: NIOSSLContext?
        do {
            tls = url.secure ? try NIOSSLContext(configuration: .makeClientConfiguration()) : nil
        } catch {
            return .failure("TLS setup: \(error)")
        }
        // Completed on every path (a promise dropped uncompleted is a programming error to NIO).
        // One loop for the promise, the channel and the deadline: the collector lives on it.
        let loop = group.next()
        let promise = loop.makePromise(of: Result.self)
        let collector = ResponseCollector(promise: promise)
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        let handler = try NIOSSLClientHandler(context: tls, serverHostname: url.isIPAddress ? nil : url.host)
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(collector)
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(to: address).get()
        } catch {
            collector.failed(error)
            return .failure("connect to \(first.text): \(error)")
        }
        let deadline = channel.eventLoop.scheduleTask(in: timeout) {
            collector.timedOut()
            channel.close(promise: nil)
        }
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: url.target)
        head.headers.add(name: "Host", value: url.hostHeader)
        head.headers.add(name: "Content-Type", value: "application/json")
        head.headers.add(name: "Content-Length", value: String(body.count))
        head.headers.add(name: "User-Agent", value: "Chorus-Webhooks/1")
        head.headers.add(name: "Connection", value: "close")
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.write(HTTPClientRequestPart.body(.byteBuffer(channel.allocator.buffer(bytes: body))), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        let result: Result
        do {
            result = try await promise.futureResult.get()
        } catch is WebhookTimeout {
            result = .failure("no answer within \(timeout.nanoseconds / 1_000_000_000) s")
        } catch {
            result = .failure("\(error)")
        }
        deadline.cancel()
        try? await channel.close()
        return result
    }
}

struct WebhookTimeout: Error {}

/// Collects the response's status (and Retry-After), reads at most `WebhookPoster.responseLimit`
/// bytes of its body, then completes: the rest of a huge body is never read.
/// `@unchecked Sendable`: it lives on its channel's event loop only (a channel handler); the
/// promise it completes is thread-safe.
final class ResponseCollector: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    private let promise: EventLoopPromise<WebhookPoster.Result>
    private var status: Int?
    private var retryAfter: Int?
    private var bodyBytes = 0

    init(promise: EventLoopPromise<WebhookPoster.Result>) {
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
            retryAfter = head.headers.first(name: "Retry-After").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        case .body(let buffer):
            bodyBytes += buffer.readableBytes
            if bodyBytes > WebhookPoster.responseLimit { finish(context) }
        case .end:
            finish(context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let status { complete(.success(.status(status, retryAfterSeconds: retryAfter))) }
        complete(.failure(ConnectionClosed()))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        complete(.failure(error))
        context.close(promise: nil)
    }

    private func finish(_ context: ChannelHandlerContext) {
        if let status { complete(.success(.status(status, retryAfterSeconds: retryAfter))) }
        context.close(promise: nil)
    }

    /// The exchange took too long (called on the channel's loop by the poster's deadline).
    func timedOut() {
        complete(.failure(WebhookTimeout()))
    }

    /// The connection never came up (its channel, and this handler's loop, may not exist).
    func failed(_ error: any Error) {
        promise.futureResult.eventLoop.execute { self.complete(.failure(error)) }
    }

    /// A promise completes once (a second completion would trap): the first outcome wins.
    private var completed = false
    private func complete(_ result: Swift.Result<WebhookPoster.Result, any Error>) {
        guard !completed else { return }
        completed = true
        promise.completeWith(result)
    }

    struct ConnectionClosed: Error, CustomStringConvertible {
        var description: String { "the connection closed before a response" }
    }
}

/// A webhook endpoint's URL, checked: http or https, a host, at most 2,048 characters.
struct WebhookURL: Sendable, Equatable {
    static let maxLength = 2_048
    let text: String
    let secure: Bool
    let host: String
    let port: Int
    /// Path and query, as the request line carries them.
    let target: String

    init?(_ text: String) {
        guard text.utf8.count <= Self.maxLength, let components = URLComponents(string: text),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host, !host.isEmpty, components.user == nil, components.password == nil
        else { return nil }
        self.text = text
        secure = scheme == "https"
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        port = components.port ?? (secure ? 443 : 80)
        guard (1...65_535).contains(port) else { return nil }
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        target = path + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
    }

    var isIPAddress: Bool { host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." } }
    var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (secure ? 443 : 80) ? name : "\(name):\(port)"
    }
}
