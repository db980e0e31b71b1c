import ChorusCore
import DTLS
import Foundation
import ICELite
import PeerTransport
import RTCP
import RTP

/// The server's `PeerTransport` and our `ClientTransport` in one process, on a simulated clock
/// and an in-memory path with no socket (str0m's two-peer `progress` loop): what either side
/// emits reaches the other `delay` later, unless the side's `drop` rule loses it. Both
/// transports run their own timers (`poll` when `nextDeadline` has come), and the server's
/// owner duties are done as the room does them (its SRs and report blocks handed back).
final class TransportPair {
    struct Options {
        /// The server's DTLS role: `.client` when the offer said `a=setup:passive`.
        var serverDTLSRole = DTLSRole.server
        var transportCC = false
        var receiverReports = true
        var checks: ICECheckSchedule? = ICECheckSchedule()
    }

    static let transportCCExtensionID: UInt8 = 3
    let serverAddress = TransportAddress(ipv4: "192.0.2.1", port: 3_478)!
    /// Where the client's datagrams come from (its NAT may give it another: `clientAddress = …`).
    var clientAddress = TransportAddress(ipv4: "192.0.2.10", port: 50_000)!
    let serverICE = ICECredentials.random()
    let clientICE = ICECredentials.random()
    let serverSSRC = SSRC(0x5E4E_0001)
    let clientSSRC = SSRC(0xC11E_0001)
    let server: PeerTransport
    let client: ClientTransport
    var now = MediaTime.seconds(1_000)
    /// One-way delay of the path, ns.
    var delay: UInt64 = 0
    var dropToServer: ([UInt8]) -> Bool = { _ in false }
    var dropToClient: ([UInt8]) -> Bool = { _ in false }
    private(set) var serverEvents: [TransportEvent] = []
    private(set) var clientEvents: [TransportEvent] = []
    private(set) var serverDrops: [TransportDropReason] = []
    private(set) var clientDrops: [TransportDropReason] = []
    /// Every datagram each side put on the path, lost or not.
    private(set) var sentToServer: [[UInt8]] = []
    private(set) var sentToClient: [[UInt8]] = []
    private var inFlight: [(at: MediaTime, datagram: [UInt8], toServer: Bool, source: TransportAddress)] = []

    init(_ options: Options = Options()) throws {
        let serverContext = try DTLSContext(certificate: DTLSCertificate(commonName: "server"))
        let clientContext = try DTLSContext(certificate: DTLSCertificate(commonName: "client"))
        var serverConfiguration = PeerTransportConfiguration(
            localICE: serverICE, remoteICE: clientICE, dtlsRole: options.serverDTLSRole,
            remoteFingerprints: [DTLSFingerprint(algorithm: .sha256, digest: clientContext.certificate.fingerprint)],
            rtcpSSRC: serverSSRC, cname: "server", clockRates: [111: 48_000, 96: 90_000],
            ntpReference: NTPClockReference(mediaTime: now, ntp: NTPTimestamp(date: Date())))
        var clientConfiguration = ClientTransportConfiguration(
            localICE: clientICE, remoteICE: serverICE, remote: serverAddress,
            dtlsRole: options.serverDTLSRole == .server ? .client : .server,
            remoteFingerprints: [DTLSFingerprint(algorithm: .sha256, digest: serverContext.certificate.fingerprint)],
            tieBreaker: 0x1234_5678_9ABC, rtcpSSRC: clientSSRC)
        clientConfiguration.checks = options.checks
        clientConfiguration.sendsReceiverReports = options.receiverReports
        clientConfiguration.clockRates = [111: 48_000]
        if options.transportCC {
            serverConfiguration.transportWideSequenceExtensionID = Self.transportCCExtensionID
            clientConfiguration.transportWideSequenceExtensionID = Self.transportCCExtensionID
        }
        server = try PeerTransport(configuration: serverConfiguration, dtlsContext: serverContext, now: now)
        client = try ClientTransport(configuration: clientConfiguration, dtlsContext: clientContext, now: now)
    }

    /// Puts what a side emitted on the path.
    func send(_ transmits: [Transmit], toServer: Bool) {
        for transmit in transmits {
            if toServer { sentToServer.append(transmit.datagram) } else { sentToClient.append(transmit.datagram) }
            guard !(toServer ? dropToServer : dropToClient)(transmit.datagram) else { continue }
            inFlight.append((now.adding(nanoseconds: delay), transmit.datagram, toServer, toServer ? clientAddress : serverAddress))
        }
    }

    /// The client's output of one call (`sendRTP`, `requestKeyFrame`, …), put on the path.
    func fromClient(_ body: (inout [Transmit]) -> Void) {
        var transmits: [Transmit] = []
        body(&transmits)
        send(transmits, toServer: true)
    }

    /// The server's output of one call, put on the path.
    func fromServer(_ body: (inout [Transmit]) -> Void) {
        var transmits: [Transmit] = []
        body(&transmits)
        send(transmits, toServer: false)
    }

    /// Advances the clock in 1 ms steps: arrivals are delivered, then due timers run.
    func run(milliseconds: Int, each: (() -> Void)? = nil) {
        for _ in 0..<milliseconds {
            now = now.adding(milliseconds: 1)
            each?()
            deliverArrivals()
            if now >= client.nextDeadline {
                fromClient { if let event = client.poll(now: now, transmits: &$0) { clientEvents.append(event) } }
            }
            if now >= server.nextDeadline {
                fromServer { if let event = server.poll(now: now, transmits: &$0) { serverEvents.append(event) } }
            }
        }
    }

    /// Runs until both sides are connected (at most two simulated seconds).
    func connect() {
        for _ in 0..<2_000 where !(client.isConnected && server.isConnected) { run(milliseconds: 1) }
    }

    private func deliverArrivals() {
        while let index = inFlight.firstIndex(where: { $0.at <= now }) {
            let arrival = inFlight.remove(at: index)
            if arrival.toServer {
                deliverToServer(arrival.datagram, from: arrival.source)
            } else {
                deliverToClient(arrival.datagram, from: arrival.source)
            }
        }
    }

    func deliverToServer(_ datagram: [UInt8], from source: TransportAddress) {
        var transmits: [Transmit] = []
        switch server.receive(datagram, from: source, now: now, transmits: &transmits) {
        case .success(let event?):
            serverEvents.append(event)
            if case .rtcp(let compound) = event { serverOwnerReads(compound) }
        case .success(nil): break
        case .failure(let reason): serverDrops.append(reason)
        }
        send(transmits, toServer: false)
    }

    @discardableResult
    func deliverToClient(_ datagram: [UInt8], from source: TransportAddress? = nil) -> Result<TransportEvent?, TransportDropReason> {
        var transmits: [Transmit] = []
        let result = client.receive(datagram, from: source ?? serverAddress, now: now, transmits: &transmits)
        switch result {
        case .success(let event?): clientEvents.append(event)
        case .success(nil): break
        case .failure(let reason): clientDrops.append(reason)
        }
        send(transmits, toServer: true)
        return result
    }

    /// What the room does with a compound from the peer: SRs and report blocks handed back,
    /// transport-cc feedback to the estimator.
    private func serverOwnerReads(_ compound: RTCPCompoundPacket) {
        for packet in compound {
            switch packet {
            case .senderReport(let report): server.receivedSenderReport(report)
            case .receiverReport(let report): for block in report.reportBlocks { server.receivedReportBlock(block, now: now) }
            case .transportFeedback(let feedback): server.receivedTransportFeedback(feedback, now: now)
            default: break
            }
        }
    }

    /// The RTP and RTCP packets each side received.
    var serverRTP: [RTPPacket] { serverEvents.compactMap { if case .rtp(let packet) = $0 { packet } else { nil } } }
    var clientRTP: [RTPPacket] { clientEvents.compactMap { if case .rtp(let packet) = $0 { packet } else { nil } } }
    var serverRTCP: [RTCPPacket] { Self.rtcp(in: serverEvents) }
    var clientRTCP: [RTCPPacket] { Self.rtcp(in: clientEvents) }

    private static func rtcp(in events: [TransportEvent]) -> [RTCPPacket] {
        events.flatMap { event -> [RTCPPacket] in
            guard case .rtcp(let compound) = event else { return [] }
            return Array(compound)
        }
    }

    /// A drop rule that loses the `n`th datagram of `kind` put on the path (counting from 1).
    static func losing(_ n: Int, of kind: PacketClass) -> ([UInt8]) -> Bool {
        var seen = 0
        return { datagram in
            guard PacketClass(datagram) == kind else { return false }
            seen += 1
            return seen == n
        }
    }

    /// An Opus-like RTP packet: `ssrc`, `sequence`, 960 samples a step, 40 payload bytes.
    static func rtp(ssrc: SSRC, sequence: UInt16, extensions: [RTPHeaderExtensionElement] = []) -> [UInt8] {
        var packet: [UInt8] = []
        try? RTPHeaderFields(payloadType: PayloadType(masking: 111), sequenceNumber: sequence,
                             timestamp: UInt32(sequence) &* 960, ssrc: ssrc, extensions: extensions).serialize(into: &packet)
        return packet + (0..<40).map { UInt8(truncatingIfNeeded: Int(sequence) &+ $0) }
    }
}
