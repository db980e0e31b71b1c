import NIOCore
import NIOPosix
import Testing
@testable import Webhooks

/// The poster against real loopback servers (`--webhooks-allow-private` is what lets it reach
/// them): the request it sends, and each guarantee — no private address without the
/// permission, no redirect followed, at most 16 KiB of a response read, the exchange bounded
/// by its timeout, TLS for https — each shown by a server that would break it.
@Suite("Webhooks: posting over HTTP")
struct WebhookPosterTests {
    static func poster(allowPrivate: Bool = true, timeout: TimeAmount = .seconds(10)) -> WebhookPoster {
        WebhookPoster(group: MultiThreadedEventLoopGroup.singleton, policy: OutboundAddressPolicy(allowPrivate: allowPrivate),
                      timeout: timeout)
    }

    static func response(_ status: String, headers: [String] = [], body: String = "") -> [UInt8] {
        let head = (["HTTP/1.1 \(status)", "Content-Length: \(body.utf8.count)"] + headers).joined(separator: "\r\n")
        return Array((head + "\r\n\r\n" + body).utf8)
    }

    func post(_ poster: WebhookPoster, _ url: String) async throws -> WebhookPoster.Result {
        let url = try #require(WebhookURL(url))
        return await poster.post(to: url, headers: [("webhook-id", "msg_1")], body: Array(#"{"a":1}"#.utf8))
    }

    @Test func postsTheSignedBodyAndReportsTheStatus() async throws {
        let server = try await CannedHTTPServer(response: Self.response("503 Service Unavailable", headers: ["Retry-After: 7"]))
        defer { Task { await server.close() } }
        let result = try await post(Self.poster(), "http://127.0.0.1:\(server.port)/in?x=1")
        #expect(result == .status(503, retryAfterSeconds: 7))
        let request = try #require(server.requests.first)
        #expect(request.hasPrefix("POST /in?x=1 HTTP/1.1\r\n"), "\(request)")
        for line in ["host: 127.0.0.1:\(server.port)", "content-type: application/json", "webhook-id: msg_1",
                     "content-length: 7", "user-agent: chorus-webhooks/1"] {
            #expect(request.lowercased().contains(line + "\r\n"), "\(line) in \(request)")
        }
        #expect(request.hasSuffix(#"{"a":1}"#))
    }

    @Test func aNameIsPostedToTheAddressThatWasCheckedWithItsOwnHostHeader() async throws {
        let resolved = await OutboundAddressPolicy(allowPrivate: true).resolve("localhost", port: 80)
        let address = try #require(try resolved.get().first?.text)
        // The poster goes to the first address only: where that one cannot be bound (an ::1
        // on a host without IPv6), there is nothing to show.
        guard let server = try? await CannedHTTPServer(host: address, response: Self.response("204 No Content")) else { return }
        defer { Task { await server.close() } }
        #expect(try await post(Self.poster(), "http://localhost:\(server.port)/h") == .status(204, retryAfterSeconds: nil))
        #expect(server.requests.first?.lowercased().contains("host: localhost:\(server.port)\r\n") == true)
    }

    @Test func privateAddressesAreRefusedBeforeAnyConnection() async throws {
        let server = try await CannedHTTPServer(response: Self.response("200 OK"))
        defer { Task { await server.close() } }
        for host in ["127.0.0.1", "localhost"] {
            guard case .failure(let reason) = try await post(Self.poster(allowPrivate: false), "http://\(host):\(server.port)/")
            else { Issue.record("\(host) was posted to"); continue }
            #expect(reason.contains("not allowed"), "\(reason)")
        }
        #expect(server.requests.isEmpty)
    }

    @Test func aRedirectIsNotFollowed() async throws {
        let target = try await CannedHTTPServer(response: Self.response("200 OK"))
        let redirecting = try await CannedHTTPServer(
            response: Self.response("302 Found", headers: ["Location: http://127.0.0.1:\(target.port)/elsewhere"]))
        defer { Task { await target.close(); await redirecting.close() } }
        #expect(try await post(Self.poster(), "http://127.0.0.1:\(redirecting.port)/") == .status(302, retryAfterSeconds: nil))
        #expect(target.requests.isEmpty)
    }

    @Test func aHugeResponseIsNotReadToItsEnd() async throws {
        // 100 MB announced, 64 KiB sent, and the connection held open: only a poster that stops
        // reading after 16 KiB answers with the status; one that reads on waits for the rest
        // until its timeout and answers "no answer within 5 s". (No wall-clock bound here: with
        // hundreds of tests sharing two cores, a task's resumptions queue behind theirs, and a
        // run once took 42 s for what takes 20 ms alone.)
        let head = Array("HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n".utf8)
        let server = try await CannedHTTPServer(response: head + [UInt8](repeating: 0x61, count: 64 * 1024))
        defer { Task { await server.close() } }
        #expect(try await post(Self.poster(timeout: .seconds(5)), "http://127.0.0.1:\(server.port)/")
                == .status(200, retryAfterSeconds: nil))
    }

    @Test func aReceiverThatNeverAnswersIsGivenUpOnAtTheTimeout() async throws {
        let silent = try await CannedHTTPServer(response: nil)
        // Headers, then a body that never comes: the bound covers the body too.
        let stalled = try await CannedHTTPServer(response: Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc".utf8))
        defer { Task { await silent.close(); await stalled.close() } }
        // The answer names the poster's own 1 s bound (not the client's 10 s default); no
        // wall-clock bound, for the reason above.
        for server in [silent, stalled] {
            let result = try await post(Self.poster(timeout: .seconds(1)), "http://127.0.0.1:\(server.port)/")
            #expect(result == .failure("no answer within 1 s"))
        }
    }

    @Test func httpsSpeaksTLS() async throws {
        // A plain-HTTP server cannot complete a TLS handshake: an https URL never posts in clear.
        let server = try await CannedHTTPServer(response: Self.response("200 OK"), closes: true)
        defer { Task { await server.close() } }
        guard case .failure = try await post(Self.poster(timeout: .seconds(3)), "https://127.0.0.1:\(server.port)/") else {
            Issue.record("an https post succeeded against a plain-HTTP server")
            return
        }
        #expect(server.requests.allSatisfy { !$0.contains("POST") })
    }

    @Test func theConnectionGuardAcceptsOnlyTheCheckedPeer() throws {
        let checked = try SocketAddress(ipAddress: "192.0.2.10", port: 443)
        #expect(WebhookPoster.isSame(try SocketAddress(ipAddress: "192.0.2.10", port: 443), checked))
        #expect(!WebhookPoster.isSame(try SocketAddress(ipAddress: "192.0.2.11", port: 443), checked))
        #expect(!WebhookPoster.isSame(try SocketAddress(ipAddress: "192.0.2.10", port: 444), checked))
        #expect(!WebhookPoster.isSame(nil, checked))
    }
}
