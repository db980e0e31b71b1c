import ChorusCore
import CongestionControl
import RTCP

/// RTCP as the transport reads it after SRTCP unprotect: compound validation (both rules),
/// packet slicing, the decoding iterator, every message's lazily decoded parts, and
/// serialization of each decoded message, whose output must parse back to the same message.
/// Each packet parser is also fed the whole input directly, as a single packet.
public func exerciseRTCP(_ bytes: [UInt8]) {
    consume(try? RTCPHeader(parsing: bytes[...]))
    exerciseRTCPPacket(bytes[...])
    exerciseCompound(bytes[...])
    let embedded = [0xEE, 0xEE] + bytes
    exerciseCompound(embedded[2...])
    consume(try? RTCPCompoundPacket(parsing: bytes, validation: .rfc3550))
}

func exerciseCompound(_ bytes: ArraySlice<UInt8>) {
    let compound: RTCPCompoundPacket
    do {
        compound = try RTCPCompoundPacket(parsing: bytes)
    } catch {
        consume(error)
        return
    }
    var total = 0
    var slices = 0
    for slice in compound.packetSlices {
        total += slice.count
        slices += 1
        fuzzRequire((try? RTCPHeader(parsing: slice))?.packetLength == slice.count, "a slice is not one packet")
    }
    fuzzRequire(total == bytes.count, "the packet slices do not cover the compound (\(total) of \(bytes.count))")
    fuzzRequire(slices == compound.count, "count \(compound.count) but \(slices) slices")
    var decoded = 0
    for packet in compound {
        exerciseDecoded(packet)
        decoded += 1
    }
    fuzzRequire(decoded == compound.count, "the iterator yields \(decoded) packets of \(compound.count)")
    for slice in compound.packetSlices { exerciseRTCPPacket(slice) }
}

func exerciseRTCPPacket(_ packet: ArraySlice<UInt8>) {
    do {
        exerciseDecoded(try RTCPPacket(parsing: packet))
    } catch {
        consume(error)
    }
    // Each type's own parser, whatever the type byte says (they must check it themselves).
    consume(try? SenderReport(parsing: packet))
    consume(try? ReceiverReport(parsing: packet))
    consume(try? SourceDescription(parsing: packet))
    consume(try? Goodbye(parsing: packet))
    consume(try? GenericNACK(parsing: packet))
    consume(try? PictureLossIndication(parsing: packet))
    consume(try? FullIntraRequest(parsing: packet))
    consume(try? ReceiverEstimatedMaximumBitrate(parsing: packet))
    if let feedback = try? TransportFeedback(parsing: packet) { exerciseTransportFeedback(feedback) }
}

/// Reads every part of a decoded packet and round-trips it through its serializer.
func exerciseDecoded(_ packet: RTCPPacket) {
    switch packet {
    case .senderReport(let report):
        consume((report.ssrc, report.ntpTimestamp.description, report.ntpTimestamp.unixNanoseconds,
                 report.ntpTimestamp.date, report.ntpTimestamp.compact, report.rtpTimestamp, report.packetCount,
                 report.octetCount, report.profileExtension.count))
        let reference = NTPClockReference(mediaTime: .seconds(100), ntp: NTPTimestamp(seconds: 3_900_000_000, fraction: 0))
        consume(reference.mediaTime(at: report.ntpTimestamp))
        exerciseReportBlocks(report.reportBlocks)
        roundTrip(packet, serializing: { (out: inout [UInt8]) throws(RTCPSerializationError) in
            try report.serialize(into: &out)
        })
    case .receiverReport(let report):
        consume((report.ssrc, report.profileExtension.count))
        exerciseReportBlocks(report.reportBlocks)
        roundTrip(packet) { (out: inout [UInt8]) throws(RTCPSerializationError) in try report.serialize(into: &out) }
    case .sourceDescription(let description):
        var chunks = 0
        for chunk in description.chunks {
            chunks += 1
            consume((chunk.source, chunk.cname, description.cname(of: chunk.source)))
            var items = 0
            for item in chunk {
                consume((item.type.rawValue, item.string))
                items += 1
                if items > 1024 { break }
            }
            if chunks > 64 { break }
        }
        fuzzRequire(chunks == description.chunkCount, "SDES iterates \(chunks) chunks of \(description.chunkCount)")
        roundTrip(packet) { (out: inout [UInt8]) throws(RTCPSerializationError) in
            try description.serialize(into: &out)
        }
    case .goodbye(let goodbye):
        consume((Array(goodbye.sources), goodbye.reasonString))
        roundTrip(packet) { (out: inout [UInt8]) throws(RTCPSerializationError) in try goodbye.serialize(into: &out) }
    case .genericNACK(let nack):
        consume((nack.senderSSRC, nack.mediaSSRC))
        var lost = 0
        for item in nack.items {
            consume((item.packetID, item.lostPacketBitmask))
            for number in item { consume(number) }
        }
        for number in nack.lostSequenceNumbers {
            consume(number)
            lost += 1
        }
        fuzzRequire(lost >= nack.items.count && lost <= 17 * nack.items.count, "NACK names \(lost) numbers")
        // The server's own packing of those numbers must serialize and parse back to them.
        let repacked = GenericNACK(senderSSRC: nack.senderSSRC, mediaSSRC: nack.mediaSSRC,
                                   lostSequenceNumbers: Array(nack.lostSequenceNumbers))
        consume(Array(repacked.lostSequenceNumbers))
        roundTrip(packet) { (out: inout [UInt8]) throws(RTCPSerializationError) in try nack.serialize(into: &out) }
    case .pictureLossIndication(let pli):
        consume((pli.senderSSRC, pli.mediaSSRC))
        roundTrip(packet) { (out: inout [UInt8]) throws(RTCPSerializationError) in try pli.serialize(into: &out) }
    case .fullIntraRequest(let fir):
        consume((fir.senderSSRC, fir.mediaSSRC, fir.entries.map { ($0.ssrc, $0.sequenceNumber) }))
        roundTrip(packet) { (out: inout [UInt8]) throws(RTCPSerializationError) in try fir.serialize(into: &out) }
    case .receiverEstimatedMaximumBitrate(let remb):
        consume((remb.senderSSRC, remb.mediaSSRC, remb.bitrate, Array(remb.ssrcs)))
        let encoded = ReceiverEstimatedMaximumBitrate.encode(bitrate: remb.bitrate)
        consume(ReceiverEstimatedMaximumBitrate.decode(exponent: encoded.exponent, mantissa: encoded.mantissa))
        // A bitrate past 2^64 decodes saturated to UInt64.max (documented), which re-encodes lossily.
        roundTrip(packet, exact: remb.bitrate != .max) { (out: inout [UInt8]) throws(RTCPSerializationError) in
            try remb.serialize(into: &out)
        }
    case .transportFeedback(let feedback):
        exerciseTransportFeedback(feedback)
    case .unknown(let type, let format, let bytes):
        consume((type.description, format, bytes.count))
    case .malformed(let type, let format, let error):
        consume((type.description, format, "\(error)"))
    }
}

func exerciseReportBlocks(_ blocks: RTCPItemList<ReportBlock>) {
    for block in blocks {
        consume((block.ssrc, block.fractionLost, block.cumulativeLost, block.extendedHighestSequenceNumber, block.jitter))
        consume(CompactNTP.roundTripNanoseconds(arrival: 0x1234_5678, lastSenderReport: block.lastSenderReport,
                                                delaySinceLastSenderReport: block.delaySinceLastSenderReport))
        consume(CompactNTP.nanoseconds(compact: block.delaySinceLastSenderReport))
    }
}

func exerciseTransportFeedback(_ feedback: TransportFeedback) {
    consume((feedback.senderSSRC, feedback.mediaSSRC, feedback.baseSequenceNumber, feedback.feedbackPacketCount,
             feedback.referenceTimeMicroseconds))
    var count = 0
    var expected = feedback.baseSequenceNumber
    for result in feedback.packets {
        fuzzRequire(result.sequenceNumber == expected, "transport-cc results out of sequence")
        let hasDelta = result.status == .receivedSmallDelta || result.status == .receivedLargeOrNegativeDelta
        fuzzRequire(hasDelta == (result.receiveDelta != nil), "receive delta present for the wrong status")
        fuzzRequire(result.isReceived || result.receiveDelta == nil, "a lost packet with a receive delta")
        consume((result.status, result.arrivalTimeMicroseconds))
        expected &+= 1
        count += 1
        if count > 0x10000 { break }
    }
    fuzzRequire(count == Int(feedback.packetStatusCount),
                "transport-cc yields \(count) results for a status count of \(feedback.packetStatusCount)")
    exerciseEstimator(feedback)
}

/// The send-side estimator fed the fuzzed feedback twice (about packets it sent around the
/// feedback's base, and a second report a second later): whatever the input, its estimate stays
/// finite and in its range, and its probe request is sane.
func exerciseEstimator(_ feedback: TransportFeedback) {
    let configuration = BandwidthEstimatorConfiguration()
    var estimator = SendSideBandwidthEstimator(configuration: configuration)
    let start = MediaTime.seconds(100)
    for offset in 0..<64 {
        estimator.onPacketSent(transportSequenceNumber: feedback.baseSequenceNumber &+ UInt16(offset) &- 8,
                               size: 1_200, at: start.adding(milliseconds: UInt64(offset)))
    }
    for round in 0..<2 {
        let now = start.adding(milliseconds: 100 + UInt64(round) * 1_000)
        let estimate = estimator.onFeedback(feedback, at: now)
        fuzzRequire(estimate.targetBitrate >= configuration.minimumBitrate
                        && estimate.targetBitrate <= configuration.maximumBitrate,
                    "estimate \(estimate.targetBitrate) out of range")
        fuzzRequire(estimate.lossFraction.isFinite && estimate.lossFraction >= 0 && estimate.lossFraction <= 1,
                    "loss fraction \(estimate.lossFraction)")
        if let probe = estimator.probeRequest(at: now) {
            fuzzRequire(probe.targetBitrate > 0 && probe.minimumBytes >= 0, "probe \(probe)")
        }
    }
}

/// Serializes a decoded message; when the serializer accepts it, the output parses back to
/// the same `RTCPPacket` (when `exact` is false, only that it parses).
func roundTrip(_ packet: RTCPPacket, exact: Bool = true,
               serializing: (inout [UInt8]) throws(RTCPSerializationError) -> Void) {
    var out: [UInt8] = []
    do {
        try serializing(&out)
    } catch {
        consume(error)
        return
    }
    let again: RTCPPacket
    do {
        again = try RTCPPacket(parsing: out)
    } catch {
        fatalError("fuzz invariant failed: a decoded \(packet) serialized to bytes that do not parse (\(error)): \(out)")
    }
    fuzzRequire(!exact || again == packet, "round trip changed the packet: \(packet) became \(again)")
}
