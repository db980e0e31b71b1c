import ChorusCore
import RTCP
import RTP
import SRTP

/// What the client sends once SRTP is keyed: its RTP (stamped with transport-wide sequence
/// numbers when negotiated), its RTCP, the feedback a receiver owes (receiver reports,
/// transport-cc), the requests it may make (NACK, PLI), and its goodbye.
extension ClientTransport {
    /// Whether media may leave: keyed, not closed by us, consent not lost (RFC 7675 §5.1).
    var maySend: Bool { srtp != nil && !isClosed && !consentExpired }

    /// Protects an RTP packet the caller wrote and appends it for the server; false when
    /// nothing may be sent yet (or any more). Consumes the packet: SRTP is added in place.
    @discardableResult
    public func sendRTP(_ packet: consuming [UInt8], transmits: inout [Transmit]) -> Bool {
        guard let protected = protectRTP(packet) else { return false }
        transmits.append((protected, configuration.remote))
        return true
    }

    /// The packet protected for the server (with our next transport-wide sequence number when
    /// transport-cc was negotiated), for an owner that sends it itself; nil when it may not.
    public func protectRTP(_ packet: consuming [UInt8]) -> [UInt8]? {
        guard let protected = protect(packet, { srtp, bytes throws(SRTPError) in
            stampTransportWideSequence(&bytes)
            try srtp.protectRTP(&bytes)
        }) else { return nil }
        counters.packetsSent &+= 1
        counters.bytesSent &+= UInt64(protected.count)
        return protected
    }

    /// Protects an RTCP compound packet and appends it for the server; false when it may not.
    @discardableResult
    public func sendRTCP(_ compound: consuming [UInt8], transmits: inout [Transmit]) -> Bool {
        guard let protected = protectRTCP(compound) else { return false }
        transmits.append((protected, configuration.remote))
        return true
    }

    /// The compound protected for the server, for an owner that sends it itself.
    public func protectRTCP(_ compound: consuming [UInt8]) -> [UInt8]? {
        guard let protected = protect(compound, { srtp, bytes throws(SRTPError) in try srtp.protectRTCP(&bytes) })
        else { return nil }
        counters.rtcpSent &+= 1
        return protected
    }

    /// SRTP or SRTCP added in the packet's own buffer by `body`; nil (and counted, when keyed)
    /// when nothing may be sent or the transform refuses.
    private func protect(_ packet: consuming [UInt8],
                         _ body: (OpenSSLSRTPTransform, inout [UInt8]) throws(SRTPError) -> Void) -> [UInt8]? {
        guard maySend, let srtp else { return nil }
        var protected = consume packet
        do {
            try body(srtp, &protected)
        } catch {
            counters.sendFailures &+= 1
            return nil
        }
        return protected
    }

    /// Our next transport-wide sequence number on the packet: written in place when the writer
    /// left the element there (what the load generator does, so that nothing is allocated),
    /// else added. A packet that is not RTP, or cannot take the element, goes as it is.
    func stampTransportWideSequence(_ packet: inout [UInt8]) {
        guard let id = configuration.transportWideSequenceExtensionID, let header = try? RTPHeader(parsing: packet)
        else { return }
        let sequence = nextTransportSequenceNumber
        if !RTPHeaderRewriter.setTransportSequenceNumber(sequence, extensionID: id, in: &packet, header: header) {
            guard let stamped = RTCPReporting.adding(transportSequence: sequence, id: id, to: packet, header: header)
            else { return }
            packet = stamped
        }
        nextTransportSequenceNumber &+= 1
    }

    /// Asks the sender of `mediaSSRC` for a key frame: a PLI (RFC 4585 §6.3.1).
    @discardableResult
    public func requestKeyFrame(mediaSSRC: SSRC, transmits: inout [Transmit]) -> Bool {
        var compound: [UInt8] = []
        guard (try? PictureLossIndication(senderSSRC: configuration.rtcpSSRC, mediaSSRC: mediaSSRC)
            .serialize(into: &compound)) != nil
        else { return false }
        return sendRTCP(compound, transmits: &transmits)
    }

    /// Asks the sender of `mediaSSRC` to retransmit `sequenceNumbers`: a Generic NACK (RFC 4585
    /// §6.2.1); false for an empty list.
    @discardableResult
    public func requestRetransmission(of sequenceNumbers: some Sequence<UInt16>, mediaSSRC: SSRC,
                                      transmits: inout [Transmit]) -> Bool {
        let nack = GenericNACK(senderSSRC: configuration.rtcpSSRC, mediaSSRC: mediaSSRC,
                               lostSequenceNumbers: sequenceNumbers)
        var compound: [UInt8] = []
        guard !nack.items.isEmpty, (try? nack.serialize(into: &compound)) != nil else { return false }
        return sendRTCP(compound, transmits: &transmits)
    }

    /// A receiver report (RFC 3550 §6.4.2) on every stream received, with the SDES CNAME
    /// every compound carries (§6.1).
    func receiverReport(now: MediaTime) -> [UInt8] {
        var out: [UInt8] = []
        let blocks = RTCPReporting.reportBlocks(&streams, at: now)
        try? ReceiverReport(ssrc: configuration.rtcpSSRC, reportBlocks: RTCPItemList(blocks)).serialize(into: &out)
        try? SourceDescription(source: configuration.rtcpSSRC, cname: configuration.cname)?.serialize(into: &out)
        return out
    }

    func sendReportIfDue(now: MediaTime, transmits: inout [Transmit]) {
        guard let due = nextReportAt, now >= due, maySend else { return }
        sendRTCP(receiverReport(now: now), transmits: &transmits)
        nextReportAt = now.adding(nanoseconds: RTCPReporting.randomizedInterval(&reportRandom))
    }

    /// The transport-cc feedback that is due, each message alone (reduced-size RTCP, RFC 5506,
    /// as browsers send it): the server's send-side estimator reads our downlink from it.
    func sendTransportFeedbackIfDue(now: MediaTime, transmits: inout [Transmit]) {
        guard maySend, let due = transportFeedback?.nextFeedbackAt, now >= due,
              let messages = transportFeedback?.feedback(senderSSRC: configuration.rtcpSSRC, mediaSSRC: lastMediaSSRC,
                                                         now: now)
        else { return }
        for message in messages where sendRTCP(message, transmits: &transmits) {
            counters.transportFeedbackSent &+= 1
        }
    }

    /// Hangs up as a browser does on `close()`: with `sources` (the streams we sent), an RTCP
    /// BYE (RFC 3550 §6.6) behind a receiver report and SDES; then DTLS close_notify. After
    /// this nothing more is sent. Idempotent.
    public func close(sources: [SSRC] = [], now: MediaTime, transmits: inout [Transmit]) {
        guard !isClosed else { return }
        if maySend, !sources.isEmpty {
            var compound = receiverReport(now: now)
            RTCPReporting.appendGoodbyes(for: sources, to: &compound)
            sendRTCP(compound, transmits: &transmits)
        }
        for datagram in dtls.close().datagrams { transmits.append((datagram, configuration.remote)) }
        dtlsDeadline = dtls.nextDeadline
        isClosed = true
        nextCheckAt = nil
        nextReportAt = nil
    }
}
