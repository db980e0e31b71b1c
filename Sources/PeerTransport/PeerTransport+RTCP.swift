import ChorusCore
import CongestionControl
import RTCP
import RTP

/// What we sent on our RTCP SSRC, for sender reports (RFC 3550 §6.4.1).
struct SendingState: Sendable {
    var packets: UInt32 = 0
    var octets: UInt32 = 0
    /// The last RTP timestamp sent on the RTCP SSRC and when, to extrapolate the SR's timestamp.
    var lastTimestamp: (rtp: UInt32, at: MediaTime, clockRate: UInt64)?
    var sentSinceLastReport = false
}

/// What a sender report counts of one RTP packet sent on our RTCP SSRC (RFC 3550 §6.4.1): its
/// timestamp, payload size and clock rate. Given by the caller, who wrote the packet.
public struct ReportedPacket: Sendable {
    public var timestamp: UInt32
    public var payloadOctets: Int
    public var clockRate: UInt64

    public init(timestamp: UInt32, payloadOctets: Int, clockRate: UInt64) {
        self.timestamp = timestamp
        self.payloadOctets = payloadOctets
        self.clockRate = clockRate
    }
}

extension PeerTransport {
    /// Report interval (`RTCPReporting.intervalNanoseconds`): about once a second, randomized.
    static let reportIntervalNanoseconds = RTCPReporting.intervalNanoseconds

    /// SRTCP from a validated address (`receive` sends the others to `probeIfAuthentic`).
    func receiveRTCP(_ datagram: [UInt8], from source: TransportAddress, now: MediaTime)
        -> Result<TransportEvent?, TransportDropReason>
    {
        guard let srtp else { return drop(.srtpNotReady) }
        var packet = datagram
        do {
            try srtp.unprotectRTCP(&packet)
        } catch {
            return drop(error == .replayed ? .srtpReplay : .srtpAuthentication)
        }
        guard let compound = try? RTCPCompoundPacket(parsing: packet) else { return drop(.malformed) }
        mediaArrived(from: source, now: now)
        counters.rtcpReceived &+= 1
        return .success(.rtcp(compound))
    }

    /// A sender report the owner found in a compound this transport returned: its NTP time
    /// gives the LSR/DLSR of our receiver reports (RFC 3550 §6.4.1). The owner decodes each
    /// compound once and hands the SRs back, so no RTCP packet is decoded twice.
    public func receivedSenderReport(_ report: SenderReport) {
        streams[report.ssrc]?.recordSenderReport(report.ntpTimestamp, at: lastReceiveTime)
    }

    /// Protects an RTP packet and appends it for the peer; false when not connected yet.
    /// `reporting` describes a packet on our RTCP SSRC (the mix stream), which our sender
    /// reports count; the caller wrote the header, so nothing is parsed here.
    @discardableResult
    public func sendRTP(_ packet: [UInt8], reporting: ReportedPacket? = nil, probeClusterID: Int? = nil,
                        now: MediaTime, transmits: inout [Transmit]) -> Bool
    {
        guard let srtp, let destination else { return false }
        var protected = stampTransportWideSequence(packet, now: now, probeClusterID: probeClusterID)
        stampAbsoluteSendTime(&protected, now: now)
        guard (try? srtp.protectRTP(&protected)) != nil else {
            counters.sendFailures &+= 1
            return false
        }
        transmits.append((protected, destination))
        counters.packetsSent &+= 1
        counters.bytesSent &+= UInt64(protected.count)
        if let reporting {
            sending.packets &+= 1
            sending.octets &+= UInt32(truncatingIfNeeded: reporting.payloadOctets)
            sending.lastTimestamp = (reporting.timestamp, now, reporting.clockRate)
            sending.sentSinceLastReport = true
        }
        return true
    }

    /// Protects an RTCP compound packet and appends it for the peer; false when not connected.
    @discardableResult
    public func sendRTCP(_ compound: [UInt8], transmits: inout [Transmit]) -> Bool {
        guard let srtp, let destination else { return false }
        var protected = compound
        guard (try? srtp.protectRTCP(&protected)) != nil else {
            counters.sendFailures &+= 1
            return false
        }
        transmits.append((protected, destination))
        counters.rtcpSent &+= 1
        return true
    }

    /// The packet with our next transport-wide sequence number added, when transport-cc is
    /// negotiated: the peer reports each one's arrival, and the send-side estimator learns the
    /// path toward the peer from those reports. Otherwise (or if it cannot be added) as it is.
    func stampTransportWideSequence(_ packet: [UInt8], now: MediaTime, probeClusterID: Int? = nil) -> [UInt8] {
        guard let id = configuration.transportWideSequenceExtensionID, bandwidth != nil,
              let header = try? RTPHeader(parsing: packet)
        else { return packet }
        let sequence = nextTransportSequenceNumber
        // One allocation: the stamped copy, with room for the SRTP tag the protect appends.
        guard let stamped = RTCPReporting.adding(transportSequence: sequence, id: id, to: packet, header: header)
        else { return packet }
        nextTransportSequenceNumber &+= 1
        // What the peer's SRTP adds (the 10-byte tag) is part of what the link carries.
        bandwidth?.onPacketSent(transportSequenceNumber: sequence, size: stamped.count + 10, at: now,
                                probeClusterID: probeClusterID)
        return stamped
    }

    /// abs-send-time on a video packet for a client that estimates its downlink itself
    /// (`absoluteSendTime`); its REMB then tells what the path carries.
    func stampAbsoluteSendTime(_ packet: inout [UInt8], now: MediaTime) {
        guard let stamp = configuration.absoluteSendTime, packet.count >= RTPHeader.fixedLength,
              stamp.payloadTypes.contains(packet[1] & 0x7F), let header = try? RTPHeader(parsing: packet)
        else { return }
        let value = AbsoluteSendTime(nanoseconds: now.nanoseconds)
        if RTPHeaderRewriter.setAbsoluteSendTime(value, extensionID: stamp.id, in: &packet, header: header) { return }
        // As for the transport-wide stamp: one allocation, with room for the SRTP tag.
        let data = (UInt8(truncatingIfNeeded: value.rawValue >> 16), UInt8(truncatingIfNeeded: value.rawValue >> 8),
                    UInt8(truncatingIfNeeded: value.rawValue))
        let stamped = withUnsafeBytes(of: data) { bytes in
            RTPHeaderRewriter.addingExtension(id: stamp.id, data: bytes, to: packet, header: header,
                                              extraCapacity: RTCPReporting.srtpTagCapacity)
        }
        if let stamped { packet = stamped }
    }

    /// Transport-cc feedback from the peer about what we sent it: the send-side estimator's input.
    public func receivedTransportFeedback(_ feedback: TransportFeedback, now: MediaTime) {
        counters.transportFeedbackReceived &+= 1
        bandwidth?.onFeedback(feedback, at: now)
    }

    /// A report block about our RTCP SSRC (the mix stream): its LSR/DLSR give the round-trip
    /// time (RFC 3550 §6.4.1), which the send-side estimator's controllers use.
    public func receivedReportBlock(_ block: ReportBlock, now: MediaTime) {
        let arrival = configuration.ntpReference.ntp(at: now).compact
        guard block.ssrc == configuration.rtcpSSRC,
              let rtt = CompactNTP.roundTripNanoseconds(arrival: arrival, lastSenderReport: block.lastSenderReport,
                                                        delaySinceLastSenderReport: block.delaySinceLastSenderReport)
        else { return }
        roundTripNanoseconds = rtt
        bandwidth?.onRoundTripTime(rtt, at: now)
    }

    /// The probe the estimator wants sent now, if any (`SendSideBandwidthEstimator.probeRequest`).
    public func probeRequest(now: MediaTime) -> ProbeCluster? {
        guard isConnected else { return nil }
        return bandwidth?.probeRequest(at: now)
    }

    /// Asks the estimator to probe for `bitrate` (before a slot resumes or moves up).
    public func requestProbe(bitrate: Int, probeFurther: Bool = false, now: MediaTime) {
        bandwidth?.requestProbe(bitrate: bitrate, probeFurther: probeFurther, at: now)
    }

    /// The send-side estimate of the path toward the peer, bit/s, once transport-cc feedback came.
    public var estimatedBitrate: Int? { bandwidthEstimate?.targetBitrate }

    /// The estimator's state, once the peer's transport-cc feedback has come.
    public var bandwidthEstimate: BandwidthEstimate? {
        counters.transportFeedbackReceived > 0 ? bandwidth?.estimate : nil
    }

    /// Notes the arrival of a packet that carries the peer's transport-wide sequence number.
    func recordTransportWideSequence(_ rtp: RTPPacket, now: MediaTime) {
        guard let id = configuration.transportWideSequenceExtensionID, transportFeedback != nil,
              rtp.header.hasExtension, let value = rtp.headerExtensions.first(id: id), value.count >= 2
        else { return }
        lastMediaSSRC = rtp.header.ssrc
        transportFeedback?.record(value.uint16(at: 0), at: now)
    }

    /// Sends the transport-cc feedback that is due, each message alone (reduced-size RTCP).
    func sendTransportFeedbackIfDue(now: MediaTime, transmits: inout [Transmit]) {
        guard isConnected, let due = transportFeedback?.nextFeedbackAt, now >= due,
              let messages = transportFeedback?.feedback(senderSSRC: configuration.rtcpSSRC,
                                                         mediaSSRC: lastMediaSSRC, now: now)
        else { return }
        for message in messages where sendRTCP(message, transmits: &transmits) {
            counters.transportFeedbackSent &+= 1
        }
    }

    func sendReportIfDue(now: MediaTime, transmits: inout [Transmit]) {
        guard isConnected, let due = nextReportAt, now >= due else { return }
        _ = sendRTCP(makeReport(now: now), transmits: &transmits)
        nextReportAt = now.adding(nanoseconds: randomizedInterval())
    }

    /// SR when we sent RTP since the last report, else RR; report blocks for every stream we
    /// receive (at most 31); SDES CNAME as RFC 3550 §6.1 requires in every compound.
    func makeReport(now: MediaTime) -> [UInt8] {
        let blocks = RTCPReporting.reportBlocks(&streams, at: now)
        var out: [UInt8] = []
        let ssrc = configuration.rtcpSSRC
        if sending.sentSinceLastReport, let last = sending.lastTimestamp {
            let elapsed = now.nanoseconds(since: last.at)
            let rtp = last.rtp &+ UInt32(truncatingIfNeeded: elapsed / 1_000 &* last.clockRate / 1_000_000)
            let report = SenderReport(
                ssrc: ssrc, ntpTimestamp: configuration.ntpReference.ntp(at: now), rtpTimestamp: rtp,
                packetCount: sending.packets, octetCount: sending.octets, reportBlocks: RTCPItemList(blocks))
            try? report.serialize(into: &out)
        } else {
            try? ReceiverReport(ssrc: ssrc, reportBlocks: RTCPItemList(blocks)).serialize(into: &out)
        }
        sending.sentSinceLastReport = false
        try? SourceDescription(source: ssrc, cname: configuration.cname)?.serialize(into: &out)
        return out
    }

    /// 0.5–1.5 × the interval, from a small xorshift generator seeded by our SSRC.
    func randomizedInterval() -> UInt64 {
        RTCPReporting.randomizedInterval(&rtcpRandom)
    }
}
