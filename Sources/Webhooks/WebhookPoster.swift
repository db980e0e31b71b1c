import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Posts one signed webhook and reports what came back, over AsyncHTTPClient: HTTP/1.1 on a
/// fresh connection (a client per post, shut down after it), TLS with full certificate and
/// host name verification for https, to the one address `OutboundAddressPolicy` checked.
///
/// How the connection is held to the checked address: the client's `dnsOverride` maps the
/// URL's host to that address (AsyncHTTPClient then connects there and still sends the URL's
/// host as SNI, verifies the certificate for it and writes it in the Host header), and the
/// connection's initializer refuses any channel whose peer is not that address, so a host the
/// override failed to match can never be reached by a lookup of the client's own. Redirects
/// are not followed (a 3xx is a failed attempt), at most `responseLimit` bytes of the response
/// body are read, and the whole exchange (connect, request, response) must end within
/// `timeout`; the name lookup before it has its own bound (`OutboundAddressPolicy`).
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
        let address: SocketAddress
        do {
            address = try await checkedAddress(of: url)
        } catch {
            return .failure(error.reason)
        }
        let client = HTTPClient(eventLoopGroup: group, configuration: configuration(for: url, to: address))
        let request = Self.request(to: url, headers: headers, body: body)
        let result = await bounded { try await exchange(request, on: client) }
        // Closes the connection (and cancels whatever is left of an exchange that timed out).
        try? await client.shutdown()
        return result
    }

    static func request(to url: WebhookURL, headers: [(String, String)], body: [UInt8]) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url.text)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "Chorus-Webhooks/1")
        request.headers.add(name: "Connection", value: "close")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        return request
    }

    /// Why a post did not start: the URL's host was refused or has no usable address.
    struct Refused: Error {
        var reason: String
    }

    /// The first address of the URL's host, resolved and allowed by the policy.
    private func checkedAddress(of url: WebhookURL) async throws(Refused) -> SocketAddress {
        switch await policy.resolve(url.host, port: url.port) {
        case .success(let resolved):
            guard let first = resolved.first, let address = try? SocketAddress(ipAddress: first.text, port: url.port) else {
                throw Refused(reason: "\(url.host) has no usable address")
            }
            return address
        case .failure(let refusal):
            throw Refused(reason: refusal.description)
        }
    }

    /// One connection to `address` for `url`: no redirects, HTTP/1.1 only, no decompression.
    private func configuration(for url: WebhookURL, to address: SocketAddress) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: timeout, read: timeout),
            decompression: .disabled)
        configuration.httpVersion = .http1Only
        if let ip = address.ipAddress { configuration.dnsOverride = [url.host: ip] }
        let expected = address
        configuration.http1_1ConnectionDebugInitializer = { channel in
            Self.isSame(channel.remoteAddress, expected) ? channel.eventLoop.makeSucceededVoidFuture()
                : channel.eventLoop.makeFailedFuture(UncheckedPeer(peer: "\(channel.remoteAddress.map { "\($0)" } ?? "?")"))
        }
        // HTTP/1.1 only, so this never runs; it refuses the same way if it ever does.
        configuration.http2ConnectionDebugInitializer = configuration.http1_1ConnectionDebugInitializer
        return configuration
    }

    static func isSame(_ peer: SocketAddress?, _ expected: SocketAddress) -> Bool {
        guard let peer, let ip = peer.ipAddress else { return false }
        return ip == expected.ipAddress && peer.port == expected.port
    }

    /// Sends the request, then reads the response body to its end or to `responseLimit` bytes,
    /// whichever comes first: the rest of a huge body is never read.
    private func exchange(_ request: HTTPClientRequest, on client: HTTPClient) async throws -> Result {
        let response = try await client.execute(request, deadline: .now() + timeout)
        var read = 0
        for try await chunk in response.body {
            read += chunk.readableBytes
            if read > Self.responseLimit { break }
        }
        let retryAfter = response.headers.first(name: "Retry-After").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        return .status(Int(response.status.code), retryAfterSeconds: retryAfter)
    }

    /// `work`, given up (cancelled) once `timeout` passes: the client's deadline ends with the
    /// response's head, so the body needs a bound of its own.
    private func bounded(_ work: @escaping @Sendable () async throws -> Result) async -> Result {
        let timeout = self.timeout
        let late = Result.failure("no answer within \(timeout.nanoseconds / 1_000_000_000) s")
        return await withTaskGroup(of: Result?.self) { group in
            group.addTask {
                do {
                    return try await work()
                } catch let error as HTTPClientError
                            where [.deadlineExceeded, .readTimeout, .connectTimeout].contains(error) {
                    return late
                } catch {
                    return Task.isCancelled ? nil : .failure("\(error)")
                }
            }
            group.addTask {
                try? await Task.sleep(for: .nanoseconds(timeout.nanoseconds))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? late
        }
    }

    /// The connection reached a peer other than the address the policy checked.
    struct UncheckedPeer: Error, CustomStringConvertible {
        var peer: String
        var description: String { "connected to \(peer), not the checked address" }
    }
}
