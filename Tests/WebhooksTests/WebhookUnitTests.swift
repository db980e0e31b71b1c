@testable import Webhooks
import Foundation
import Storage
import Testing

/// The webhook pieces that need no network: the signature (the Standard Webhooks example
/// vector), endpoint URLs, the outbound address policy and the retry rule.
@Suite("Webhooks: signing, URLs, address policy, retries")
struct WebhookUnitTests {
    @Test func signatureMatchesTheStandardWebhooksExample() {
        let signature = WebhookSignature.sign(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
                                              body: Array(#"{"test": 2432232314}"#.utf8),
                                              secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        let secret = WebhookSignature.newSecret()
        #expect(secret.hasPrefix("whsec_") && secret.count == 6 + 32)
    }

    @Test func endpointURLs() throws {
        let url = try #require(WebhookURL("https://hooks.example.com:8443/in?x=1"))
        #expect(url.secure && url.host == "hooks.example.com" && url.port == 8443)
        #expect(WebhookURL("http://[::1]/h")?.host == "::1")
        for bad in ["ftp://x/y", "http://", "https://user:pw@host/", "http://h:0/", "not a url",
                    "http://h/" + String(repeating: "a", count: 2_100)] {
            #expect(WebhookURL(bad) == nil, "\(bad)")
        }
    }

    @Test func privateAndMetadataAddressesAreRefused() async {
        for address: [UInt8] in [[127, 0, 0, 1], [10, 1, 2, 3], [172, 20, 0, 1], [192, 168, 1, 1], [169, 254, 169, 254],
                                 [100, 64, 0, 1], [0, 0, 0, 0], [224, 0, 0, 1], [255, 255, 255, 255]] {
            #expect(OutboundAddressPolicy.isPrivate(address), "\(address)")
        }
        for address: [UInt8] in [[93, 184, 216, 34], [8, 8, 8, 8], [172, 32, 0, 1]] {
            #expect(!OutboundAddressPolicy.isPrivate(address), "\(address)")
        }
        let loopback6 = [UInt8](repeating: 0, count: 15) + [1]
        let mapped = [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF, 127, 0, 0, 1]
        let uniqueLocal: [UInt8] = [0xFD] + [UInt8](repeating: 0, count: 15)
        let linkLocal: [UInt8] = [0xFE, 0x80] + [UInt8](repeating: 0, count: 14)
        let global: [UInt8] = [0x26, 0x06, 0x28, 0x00] + [UInt8](repeating: 1, count: 12)
        for address in [loopback6, mapped, uniqueLocal, linkLocal] { #expect(OutboundAddressPolicy.isPrivate(address)) }
        #expect(!OutboundAddressPolicy.isPrivate(global))
        // Names are resolved and checked: localhost is loopback.
        let refused = await OutboundAddressPolicy().resolve("localhost", port: 80)
        guard case .failure(.notAllowed) = refused else {
            Issue.record("localhost allowed: \(refused)")
            return
        }
        let allowed = await OutboundAddressPolicy(allowPrivate: true).resolve("127.0.0.1", port: 80)
        #expect((try? allowed.get())?.first?.text == "127.0.0.1")
    }

    @Test func retriesBackOffForADayThenFail() {
        let created = Date(timeIntervalSince1970: 1_800_000_000)
        func send(attempts: Int) -> WebhookSend {
            WebhookSend(deliveryRowId: 1, attempts: attempts, eventId: "msg_1", type: "room.started", body: "{}",
                        url: "http://h/", secret: "whsec_", eventCreatedAt: created)
        }
        #expect(WebhookDispatcher.outcome(.status(204, retryAfterSeconds: nil), send: send(attempts: 0), now: created)
                == .delivered(status: 204))
        #expect(WebhookDispatcher.outcome(.status(410, retryAfterSeconds: nil), send: send(attempts: 0), now: created) == .gone)
        guard case .retry(500, _, let next) = WebhookDispatcher.outcome(.status(500, retryAfterSeconds: nil),
                                                                         send: send(attempts: 0), now: created)
        else { Issue.record("500 not retried"); return }
        #expect((0.8...1.2).contains(next.timeIntervalSince(created)))
        guard case .retry(nil, let error, let later) = WebhookDispatcher.outcome(.failure("refused"), send: send(attempts: 20),
                                                                                 now: created.addingTimeInterval(3_600))
        else { Issue.record("failure not retried"); return }
        #expect(error == "refused" && later.timeIntervalSince(created) > 3_600 + 5_000)
        guard case .retry(429, _, let throttled) = WebhookDispatcher.outcome(.status(429, retryAfterSeconds: 120),
                                                                              send: send(attempts: 0), now: created)
        else { Issue.record("429 not retried"); return }
        #expect(throttled.timeIntervalSince(created) >= 120)
        // A day after the event, the next failure is the last.
        #expect(WebhookDispatcher.outcome(.status(503, retryAfterSeconds: nil), send: send(attempts: 23),
                                          now: created.addingTimeInterval(86_401)) == .failed(status: 503, error: "status 503"))
    }
}
