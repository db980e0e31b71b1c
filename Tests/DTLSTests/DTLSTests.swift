import ChorusCore
import DTLS
import Foundation
import SRTP
import Testing

/// Two in-process endpoints (client and server) with datagrams carried by the test.
struct HandshakePair {
    let client: DTLSEndpoint
    let server: DTLSEndpoint
    var clientEvent: DTLSEvent?
    var serverEvent: DTLSEvent?
    var largest = 0

    init(serverSees fingerprintOfClient: [DTLSFingerprint]? = nil) throws {
        let serverContext = try DTLSContext(certificate: DTLSCertificate())
        let clientContext = try DTLSContext(certificate: DTLSCertificate())
        let expectedClient = fingerprintOfClient
            ?? [DTLSFingerprint(algorithm: .sha256, digest: clientContext.certificate.fingerprint)]
        server = try DTLSEndpoint(context: serverContext, role: .server, remoteFingerprints: expectedClient)
        client = try DTLSEndpoint(context: clientContext, role: .client, remoteFingerprints: [
            DTLSFingerprint(algorithm: .sha256, digest: serverContext.certificate.fingerprint),
        ])
    }

    /// Runs flights back and forth until both sides are done; `drop` may discard datagrams.
    mutating func run(now: MediaTime = .seconds(1), drop: (Int, [UInt8]) -> Bool = { _, _ in false }) {
        var toServer = client.start(now: now).datagrams
        var toClient: [[UInt8]] = []
        var sent = 0
        for _ in 0..<20 where clientEvent == nil || serverEvent == nil {
            for datagram in toServer {
                largest = max(largest, datagram.count)
                sent += 1
                if drop(sent, datagram) { continue }
                let output = server.handle(datagram, now: now)
                toClient += output.datagrams
                serverEvent = serverEvent ?? output.event
            }
            toServer = []
            for datagram in toClient {
                largest = max(largest, datagram.count)
                sent += 1
                if drop(sent, datagram) { continue }
                let output = client.handle(datagram, now: now)
                toServer += output.datagrams
                clientEvent = clientEvent ?? output.event
            }
            toClient = []
            if toServer.isEmpty && (clientEvent == nil || serverEvent == nil) {
                // Lost flight: let the retransmission timers fire (OpenSSL's own clock decides).
                Thread.sleep(forTimeInterval: 0.25)
                let later = now.adding(milliseconds: 5_000)
                toServer += client.handleTimeout(now: later).datagrams
                toClient += server.handleTimeout(now: later).datagrams
                for datagram in toClient {
                    let output = client.handle(datagram, now: later)
                    toServer += output.datagrams
                    clientEvent = clientEvent ?? output.event
                }
                toClient = []
            }
        }
    }
}

@Suite("DTLS-SRTP handshake (OpenSSL, in process)")
struct DTLSTests {
    @Test func handshakeExportsMatchingKeys() throws {
        var pair = try HandshakePair()
        pair.run()
        guard case .connected(let clientKeys) = pair.clientEvent, case .connected(let serverKeys) = pair.serverEvent
        else {
            Issue.record("handshake did not complete: \(String(describing: pair.clientEvent)) \(String(describing: pair.serverEvent))")
            return
        }
        #expect(clientKeys.profile == .aeadAES128GCM)
        #expect(clientKeys.local == serverKeys.remote && clientKeys.remote == serverKeys.local)
        #expect(clientKeys.local != clientKeys.remote)
        #expect(pair.largest <= 1200)
        #expect(pair.server.state == .connected && pair.client.state == .connected)

        // The exported keys work for SRTP both ways.
        let clientSRTP = try LibSRTPTransform(clientKeys)
        let serverSRTP = try LibSRTPTransform(serverKeys)
        let plain: [UInt8] = [0x80, 0x6f, 0, 1, 0, 0, 0, 10, 1, 2, 3, 4] + Array(repeating: 7, count: 40)
        var packet = plain
        try clientSRTP.protectRTP(&packet)
        try serverSRTP.unprotectRTP(&packet)
        #expect(packet == plain)
    }

    @Test func wrongFingerprintFailsTheHandshake() throws {
        let bogus = DTLSFingerprint(algorithm: .sha256, digest: Array(repeating: 0xAB, count: 32))
        var pair = try HandshakePair(serverSees: [bogus])
        pair.run()
        #expect(pair.serverEvent == .failed(.fingerprintMismatch))
        #expect(pair.server.state == .failed)
    }

    @Test func lostFlightIsRetransmitted() throws {
        var pair = try HandshakePair()
        // Drop the server's first flight (the second datagram overall).
        pair.run(drop: { index, _ in index == 2 })
        guard case .connected = pair.serverEvent, case .connected = pair.clientEvent else {
            Issue.record("no recovery from a lost flight")
            return
        }
    }

    @Test func garbageNeverTraps() throws {
        let pair = try HandshakePair()
        var generator = SystemRandomNumberGenerator()
        for length in [0, 1, 13, 25, 100, 1500] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = pair.server.handle([22, 0xfe, 0xfd] + bytes, now: .seconds(1))
        }
        #expect(pair.server.state != .connected)
    }

    @Test func fingerprintsParseFromSDPForm() {
        let fp = DTLSFingerprint(algorithm: "SHA-256", hex: "AB:cd:01")
        #expect(fp?.digest == [0xAB, 0xCD, 0x01] && fp?.algorithm == .sha256)
        #expect(DTLSFingerprint(algorithm: "md5", hex: "AB") == nil)
        #expect(DTLSFingerprint(algorithm: "sha-256", hex: "ABC") == nil)
        #expect(DTLSFingerprint(algorithm: "sha-256", hex: "") == nil)
    }
}
