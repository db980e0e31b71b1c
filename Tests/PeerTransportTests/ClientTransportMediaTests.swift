import ChorusCore
import ICELite
import PeerTransport
import RTCP
import RTP
import STUN
import Testing

@Suite("ClientTransport and PeerTransport: media and feedback")
struct ClientTransportMediaTests {
    /// RTP and RTCP each way, through SRTP and SRTCP: what arrives is what was written, and
    /// what crossed the path was not the plain payload.
    @Test func srtpAndSrtcpFlowBothWays() throws {
        let pair = try TransportPair(.init(receiverReports: false))
        pair.connect()
        let up = TransportPair.rtp(ssrc: pair.clientSSRC, sequence: 7)
        let down = TransportPair.rtp(ssrc: pair.serverSSRC, sequence: 9)
        pair.fromClient { #expect(pair.client.sendRTP(up, transmits: &$0)) }
        pair.fromServer { #expect(pair.server.sendRTP(down, now: pair.now, transmits: &$0)) }
        var report: [UInt8] = []
        try ReceiverReport(ssrc: pair.clientSSRC).serialize(into: &report)
        pair.fromClient { #expect(pair.client.sendRTCP(report, transmits: &$0)) }
        var pli: [UInt8] = []
        try PictureLossIndication(senderSSRC: pair.serverSSRC, mediaSSRC: pair.clientSSRC).serialize(into: &pli)
        pair.fromServer { #expect(pair.server.sendRTCP(pli, transmits: &$0)) }
        let wire = try #require(pair.sentToServer.last { PacketClass($0) == .rtp })
        pair.run(milliseconds: 1)
        #expect(pair.serverRTP.map { Array($0.bytes) } == [up])
        #expect(pair.clientRTP.map { Array($0.bytes) } == [down])
        #expect(wire.count > up.count && wire[12..<up.count] != up[12...])
        #expect(pair.serverRTCP == [.receiverReport(ReceiverReport(ssrc: pair.clientSSRC))])
        #expect(pair.clientRTCP == [.pictureLossIndication(PictureLossIndication(senderSSRC: pair.serverSSRC,
                                                                                  mediaSSRC: pair.clientSSRC))])
        #expect(pair.client.counters.packetsSent == 1 && pair.client.counters.rtcpSent == 1)
        #expect(pair.client.counters.packetsReceived == 1 && pair.client.counters.rtcpReceived == 1)
    }

    /// 3 s of 20 ms packets each way over a 15 ms path, one in ten lost downstream and one in
    /// twenty upstream: each side's report counts exactly the other's losses, and the client's
    /// report (LSR/DLSR from the server's sender report) gives the server the 30 ms round trip.
    @Test func receiverReportsCarryLossEachWayAndTheRoundTrip() throws {
        let pair = try TransportPair()
        pair.delay = 15_000_000
        pair.connect()
        pair.dropToClient = { PacketClass($0) == .rtp && $0[3] % 10 == 3 }
        pair.dropToServer = { PacketClass($0) == .rtp && $0[3] % 20 == 7 }
        var sequence: UInt16 = 0
        pair.run(milliseconds: 3_000) {
            guard pair.now.nanoseconds % 20_000_000 == 0 else { return }
            sequence &+= 1
            let reported = ReportedPacket(timestamp: UInt32(sequence) &* 960, payloadOctets: 40, clockRate: 48_000)
            pair.fromServer {
                pair.server.sendRTP(TransportPair.rtp(ssrc: pair.serverSSRC, sequence: sequence), reporting: reported,
                                    now: pair.now, transmits: &$0)
            }
            pair.fromClient { pair.client.sendRTP(TransportPair.rtp(ssrc: pair.clientSSRC, sequence: sequence), transmits: &$0) }
        }
        let fromClient = pair.serverRTCP.flatMap { packet -> [ReportBlock] in
            if case .receiverReport(let report) = packet, report.ssrc == pair.clientSSRC { Array(report.reportBlocks) } else { [] }
        }
        #expect(fromClient.count >= 2)
        let (previous, clientBlock) = (fromClient[fromClient.count - 2], fromClient[fromClient.count - 1])
        #expect(clientBlock.ssrc == pair.serverSSRC)
        let downHighest = Int(clientBlock.extendedHighestSequenceNumber)
        #expect(downHighest > 100)
        let lostDown = (1...downHighest).filter { $0 % 10 == 3 }
        #expect(Int(clientBlock.cumulativeLost) == lostDown.count)
        // The fraction covers the interval since the previous report (RFC 3550 §6.4.1).
        let since = Int(previous.extendedHighestSequenceNumber)
        let lostInInterval = lostDown.filter { $0 > since }.count
        #expect(Int(clientBlock.fractionLost) == lostInInterval * 256 / (downHighest - since))
        let fromServer = pair.clientRTCP.flatMap { packet -> [ReportBlock] in
            if case .senderReport(let report) = packet { Array(report.reportBlocks) } else { [] }
        }
        let serverBlock = try #require(fromServer.last { $0.ssrc == pair.clientSSRC })
        let upHighest = Int(serverBlock.extendedHighestSequenceNumber)
        #expect(Int(serverBlock.cumulativeLost) == (1...upHighest).filter { $0 % 20 == 7 }.count)
        let roundTrip = try #require(pair.server.roundTripNanoseconds)
        #expect(roundTrip > 29_000_000 && roundTrip < 31_000_000, "round trip \(roundTrip / 1_000) µs")
    }

    /// The feedback a receiver asks with, each way: Generic NACK (RFC 4585 §6.2.1) for lost
    /// sequence numbers and PLI (§6.3.1), arriving as parsed values naming both SSRCs.
    @Test func nackAndPLIEachWay() throws {
        let pair = try TransportPair(.init(receiverReports: false))
        pair.connect()
        pair.fromClient {
            #expect(pair.client.requestRetransmission(of: [5, 6, 9, 40], mediaSSRC: pair.serverSSRC, transmits: &$0))
            #expect(!pair.client.requestRetransmission(of: [], mediaSSRC: pair.serverSSRC, transmits: &$0))
            #expect(pair.client.requestKeyFrame(mediaSSRC: pair.serverSSRC, transmits: &$0))
        }
        var nack: [UInt8] = []
        try GenericNACK(senderSSRC: pair.serverSSRC, mediaSSRC: pair.clientSSRC, lostSequenceNumbers: [100, 117])
            .serialize(into: &nack)
        var pli: [UInt8] = []
        try PictureLossIndication(senderSSRC: pair.serverSSRC, mediaSSRC: pair.clientSSRC).serialize(into: &pli)
        pair.fromServer {
            pair.server.sendRTCP(nack, transmits: &$0)
            pair.server.sendRTCP(pli, transmits: &$0)
        }
        pair.run(milliseconds: 1)
        let (up, upPLI) = try #require(Self.nackThenPLI(pair.serverRTCP), "the server got \(pair.serverRTCP)")
        #expect(Array(up.lostSequenceNumbers) == [5, 6, 9, 40] && up.senderSSRC == pair.clientSSRC)
        #expect(up.mediaSSRC == pair.serverSSRC && upPLI.mediaSSRC == pair.serverSSRC && upPLI.senderSSRC == pair.clientSSRC)
        let (down, downPLI) = try #require(Self.nackThenPLI(pair.clientRTCP), "the client got \(pair.clientRTCP)")
        #expect(Array(down.lostSequenceNumbers) == [100, 117] && down.mediaSSRC == pair.clientSSRC)
        #expect(downPLI.mediaSSRC == pair.clientSSRC)
    }

    /// The NACK and the PLI `packets` are, in that order; nil when they are anything else.
    static func nackThenPLI(_ packets: [RTCPPacket]) -> (GenericNACK, PictureLossIndication)? {
        guard packets.count == 2, case .genericNACK(let nack) = packets[0],
              case .pictureLossIndication(let pli) = packets[1]
        else { return nil }
        return (nack, pli)
    }

    /// Transport-cc each way: the client stamps consecutive transport-wide numbers (added to a
    /// packet without the element, written in place where the writer left one), the server
    /// reports their arrivals, the lost one as not received; and the client reports the
    /// server's numbers, which the server's estimator takes.
    @Test func transportCCFeedbackEachWay() throws {
        let pair = try TransportPair(.init(transportCC: true, receiverReports: false))
        pair.connect()
        let id = TransportPair.transportCCExtensionID
        pair.dropToServer = TransportPair.losing(4, of: .rtp)
        for sequence in UInt16(1)...10 {
            let placeholder = sequence > 5 ? [RTPHeaderExtensionElement(id: id, value: .transportSequenceNumber(0))] : []
            pair.fromClient {
                pair.client.sendRTP(TransportPair.rtp(ssrc: pair.clientSSRC, sequence: sequence, extensions: placeholder),
                                    transmits: &$0)
            }
        }
        pair.run(milliseconds: 1)
        #expect(pair.serverRTP.count == 9)
        #expect(pair.serverRTP.allSatisfy { $0.headerExtensions.filter { $0.id == id }.count == 1 })
        let stamps = pair.serverRTP.compactMap { $0.headerExtensions.first(id: id)?.uint16(at: 0) }
        let first = try #require(stamps.first)
        #expect(stamps == [0, 1, 2, 4, 5, 6, 7, 8, 9].map { first &+ $0 })
        pair.dropToClient = TransportPair.losing(2, of: .rtp)
        for sequence in UInt16(1)...5 {
            pair.fromServer {
                pair.server.sendRTP(TransportPair.rtp(ssrc: pair.serverSSRC, sequence: sequence), now: pair.now, transmits: &$0)
            }
        }
        pair.run(milliseconds: 150)
        let toClient = pair.clientRTCP.compactMap { if case .transportFeedback(let feedback) = $0 { feedback } else { nil } }
        let aboutUp = try #require(toClient.first)
        #expect(aboutUp.baseSequenceNumber == first)
        #expect(aboutUp.packets.map(\.isReceived) == [true, true, true, false, true, true, true, true, true, true])
        let toServer = pair.serverRTCP.compactMap { if case .transportFeedback(let feedback) = $0 { feedback } else { nil } }
        let aboutDown = try #require(toServer.first)
        #expect(aboutDown.packets.map(\.isReceived) == [true, false, true, true, true])
        #expect(pair.server.counters.transportFeedbackReceived >= 1 && pair.client.counters.transportFeedbackSent >= 1)
    }

    /// Hanging up: the client's BYE for its stream and close_notify end the call at the
    /// server, and nothing leaves the client after; the server's close is heard the same way.
    @Test func closingSaysGoodbyeAndStopsSending() throws {
        let pair = try TransportPair(.init(receiverReports: false))
        pair.connect()
        pair.fromClient { pair.client.close(sources: [pair.clientSSRC], now: pair.now, transmits: &$0) }
        pair.run(milliseconds: 1)
        #expect(pair.serverRTCP.contains { if case .goodbye(let bye) = $0 { bye.sources.contains(pair.clientSSRC) } else { false } })
        #expect(pair.serverEvents.last == .closed && !pair.client.isConnected)
        pair.fromClient { #expect(!pair.client.sendRTP(TransportPair.rtp(ssrc: pair.clientSSRC, sequence: 1), transmits: &$0)) }

        let other = try TransportPair(.init(receiverReports: false))
        other.connect()
        other.fromServer { other.server.close(sources: [other.serverSSRC], now: other.now, transmits: &$0) }
        other.run(milliseconds: 1)
        #expect(other.clientEvents.last == .closed && other.client.closedByPeer)
        #expect(other.clientRTCP.contains { if case .goodbye(let bye) = $0 { bye.sources.contains(other.serverSSRC) } else { false } })
    }

    /// SRTP is added and removed in the packet's own buffer: no copy of a packet on either path.
    @Test func packetsAreProtectedAndUnprotectedInTheirOwnBuffers() throws {
        let pair = try TransportPair(.init(receiverReports: false))
        pair.connect()
        var packet = TransportPair.rtp(ssrc: pair.clientSSRC, sequence: 3)
        packet.reserveCapacity(packet.count + 16)
        let sent = packet.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
        // Called outside `#require`, whose expansion would hold a copy of its arguments.
        let result = pair.client.protectRTP(consume packet)
        let protected = try #require(result)
        #expect(protected.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } == sent)
        var transmits: [Transmit] = []
        pair.server.sendRTP(TransportPair.rtp(ssrc: pair.serverSSRC, sequence: 4), now: pair.now, transmits: &transmits)
        let datagram = try #require(transmits.first).datagram
        transmits.removeAll()
        let arrived = datagram.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
        guard case .success(.rtp(let rtp)?) = pair.client.receive(consume datagram, from: pair.serverAddress, now: pair.now,
                                                                   transmits: &transmits)
        else {
            Issue.record("the packet did not arrive")
            return
        }
        #expect(rtp.bytes.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } == arrived)
    }
}
