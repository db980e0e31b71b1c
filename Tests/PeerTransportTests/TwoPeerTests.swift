import ChorusCore
import DTLS
import Foundation
import ICELite
import PeerTransport
import RTCP
import RTP
import SRTP
import STUN
import Testing

/// Our own client-role ICE, DTLS and SRTP against the server's PeerTransport, in process, on a
/// simulated clock (OpenSSL keeps its own retransmission clock; the handshake here is lossless).
struct TwoPeerHarness {
    let client = TransportAddress(ipv4: "127.0.0.1", port: 50_000)!
    let serverCreds = ICECredentials.random()
    let clientCreds = ICECredentials.random()
    /// What the server transport produced and nobody read yet.
    var transmits: [Transmit] = []
    let server: PeerTransport
    let clientICE: ICEClientRole
    let clientDTLS: DTLSEndpoint
    var clientSRTP: LibSRTPTransform?
    var now = MediaTime.seconds(100)

    init(fingerprintOverride: [DTLSFingerprint]? = nil) throws {
        let serverContext = try DTLSContext(certificate: DTLSCertificate())
        let clientContext = try DTLSContext(certificate: DTLSCertificate())
        let clientFingerprint = [DTLSFingerprint(algorithm: .sha256, digest: clientContext.certificate.fingerprint)]
        let configuration = PeerTransportConfiguration(
            localICE: serverCreds, remoteICE: clientCreds, dtlsRole: .server,
            remoteFingerprints: fingerprintOverride ?? clientFingerprint, rtcpSSRC: SSRC(1111), cname: "chorus",
            clockRates: [111: 48_000], ntpReference: NTPClockReference(mediaTime: .seconds(100), ntp: NTPTimestamp(date: Date())))
        server = try PeerTransport(configuration: configuration, dtlsContext: serverContext, now: now)
        clientICE = ICEClientRole(local: clientCreds, remote: serverCreds, tieBreaker: 42)
        clientDTLS = try DTLSEndpoint(context: clientContext, role: .client, remoteFingerprints: [
            DTLSFingerprint(algorithm: .sha256, digest: serverContext.certificate.fingerprint),
        ])
    }

    /// One datagram into the server transport; what it answers is kept in `transmits`.
    mutating func deliver(_ datagram: [UInt8], from source: TransportAddress? = nil)
        -> Result<TransportEvent?, TransportDropReason>
    {
        server.receive(datagram, from: source ?? client, now: now, transmits: &transmits)
    }

    mutating func poll() -> TransportEvent? {
        server.poll(now: now, transmits: &transmits)
    }

    /// What the server sent since the last call.
    mutating func take() -> [Transmit] {
        defer { transmits.removeAll() }
        return transmits
    }

    /// ICE check with USE-CANDIDATE, then the DTLS handshake; returns the server's events.
    mutating func connect() throws -> [TransportEvent] {
        var events: [TransportEvent] = []
        let id = TransactionID.random()
        let check = clientICE.bindingRequest(transactionID: id, useCandidate: true)
        if case .success(let event?) = deliver(check) { events.append(event) }
        let responses = take()
        #expect(responses.count == 1)
        if case .success = clientICE.validateResponse(responses[0].0, transactionID: id) {} else {
            Issue.record("client rejected the server's check response")
        }
        var toServer = clientDTLS.start(now: now).datagrams
        for _ in 0..<10 where !toServer.isEmpty {
            for datagram in toServer {
                if case .success(let event?) = deliver(datagram) { events.append(event) }
            }
            toServer = []
            for (datagram, _) in take() {
                let output = clientDTLS.handle(datagram, now: now)
                toServer += output.datagrams
                if case .connected(let keys) = output.event { clientSRTP = try LibSRTPTransform(keys) }
            }
        }
        return events
    }

    func rtp(sequence: UInt16, ssrc: UInt32 = 0xCAFE) -> [UInt8] {
        let timestamp = UInt32(sequence) &* 960
        var packet: [UInt8] = [0x80, 111, UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
        packet += [UInt8(timestamp >> 24), UInt8((timestamp >> 16) & 0xFF), UInt8((timestamp >> 8) & 0xFF),
                   UInt8(timestamp & 0xFF)]
        packet += [UInt8(ssrc >> 24), UInt8((ssrc >> 16) & 0xFF), UInt8((ssrc >> 8) & 0xFF), UInt8(ssrc & 0xFF)]
        return packet + [UInt8](repeating: UInt8(sequence & 0xFF), count: 80)
    }
}

@Suite("PeerTransport against our own client-role peer")
struct TwoPeerTests {
    @Test func iceThenDTLSConnectsAndKeysSRTP() throws {
        var harness = try TwoPeerHarness()
        let events = try harness.connect()
        #expect(events.contains(.nominated(harness.client)))
        #expect(events.contains { if case .connected = $0 { return true } else { return false } })
        #expect(harness.server.isConnected)
        #expect(harness.clientSRTP != nil)
    }

    @Test func seededLossAndReorderingAreMeasuredInReceiverReports() throws {
        var harness = try TwoPeerHarness()
        _ = try harness.connect()
        let clientSRTP = try #require(harness.clientSRTP)
        var generator = SplitMix64(seed: 7)
        var packets: [[UInt8]] = []
        var dropped = 0
        for sequence in UInt16(65_500)...UInt16(65_535) {
            packets.append(harness.rtp(sequence: sequence))
        }
        for sequence in UInt16(0)..<UInt16(164) { packets.append(harness.rtp(sequence: sequence)) }
        // Keep the last packet so the highest sequence is known; drop ~10 % of the others.
        var delivered: [[UInt8]] = []
        for (index, packet) in packets.enumerated() {
            if index < packets.count - 1, Int.random(in: 0..<10, using: &generator) == 0 {
                dropped += 1
                continue
            }
            delivered.append(packet)
        }
        // Reorder: swap some neighbours.
        var index = 0
        while index + 1 < delivered.count - 1 {
            if Int.random(in: 0..<5, using: &generator) == 0 { delivered.swapAt(index, index + 1) }
            index += 2
        }
        var accepted = 0
        for packet in delivered {
            var protected = packet
            try clientSRTP.protectRTP(&protected)
            harness.now = harness.now.adding(milliseconds: 20)
            if case .success(.rtp(let plain)?) = harness.deliver(protected) {
                #expect(Array(plain.bytes) == packet)
                accepted += 1
            }
        }
        #expect(accepted == delivered.count)
        #expect(harness.server.counters.packetsReceived == UInt64(delivered.count))

        // A replayed packet is refused and counted.
        var replay = delivered[0]
        try clientSRTP.protectRTP(&replay)
        #expect(harness.deliver(replay) == .failure(.srtpReplay))

        // The receiver report counts exactly the packets the network lost, across the wrap.
        harness.now = harness.now.adding(milliseconds: 600)
        _ = harness.poll()
        let reports = harness.take().map(\.datagram)
        var blocks: [ReportBlock] = []
        for report in reports {
            var plain = report
            try clientSRTP.unprotectRTCP(&plain)
            for slice in try RTCPCompoundPacket(parsing: plain).packetSlices {
                if case .receiverReport(let rr) = try RTCPPacket(parsing: slice) { blocks += Array(rr.reportBlocks) }
            }
        }
        let block = try #require(blocks.first)
        #expect(block.ssrc == SSRC(0xCAFE))
        #expect(block.cumulativeLost == Int32(dropped))
        #expect(block.extendedHighestSequenceNumber == 65_536 + 163)
    }

    @Test func certificateNotMatchingTheOfferFails() throws {
        var harness = try TwoPeerHarness(fingerprintOverride: [
            DTLSFingerprint(algorithm: .sha256, digest: Array(repeating: 1, count: 32)),
        ])
        let events = try harness.connect()
        #expect(events.contains { if case .failed = $0 { return true } else { return false } })
        #expect(!harness.server.isConnected)
    }

    @Test func mediaFromUnvalidatedAddressesIsDropped() throws {
        var harness = try TwoPeerHarness()
        _ = try harness.connect()
        let stranger = TransportAddress(ipv4: "127.0.0.2", port: 1)!
        #expect(harness.deliver(harness.rtp(sequence: 1), from: stranger) == .failure(.notValidated))
        #expect(harness.deliver([22, 254, 253, 0], from: stranger) == .failure(.dtlsBeforeICE))
        var forged = harness.rtp(sequence: 2)
        forged += [UInt8](repeating: 0, count: 16)
        #expect(harness.deliver(forged) == .failure(.srtpAuthentication))
    }

    @Test func noCheckWithinThirtySecondsExpiresConsent() throws {
        var harness = try TwoPeerHarness()
        _ = try harness.connect()
        harness.now = harness.now.adding(milliseconds: 29_000)
        #expect(harness.poll() != .consentExpired)
        harness.now = harness.now.adding(milliseconds: 1_001)
        #expect(harness.poll() == .consentExpired)
    }
}
