import ChorusCore
import RTCP
import Testing

@Suite("Compound RTCP (RFC 3550 §6.1, §A.2; RFC 5506)")
struct CompoundPacketTests {
    @Test func iteratesEveryMessageType() throws {
        let datagram = RTCPVectors.senderReport + RTCPVectors.sourceDescription + RTCPVectors.genericNACK
            + RTCPVectors.pictureLossIndication + RTCPVectors.fullIntraRequest + RTCPVectors.remb
            + RTCPVectors.transportFeedbackZeroPadded + RTCPVectors.receiverReport + RTCPVectors.goodbye
            + RTCPVectors.transportFeedback  // the padded one last: padding only on the last packet
        let compound = try RTCPCompoundPacket(parsing: datagram, validation: .rfc3550)
        #expect(compound.count == 10)
        let kinds = compound.map { packet -> String in
            switch packet {
            case .senderReport: return "SR"
            case .receiverReport: return "RR"
            case .sourceDescription: return "SDES"
            case .goodbye: return "BYE"
            case .genericNACK: return "NACK"
            case .pictureLossIndication: return "PLI"
            case .fullIntraRequest: return "FIR"
            case .receiverEstimatedMaximumBitrate: return "REMB"
            case .transportFeedback: return "TWCC"
            case .unknown: return "unknown"
            case .malformed: return "malformed"
            }
        }
        #expect(kinds == ["SR", "SDES", "NACK", "PLI", "FIR", "REMB", "TWCC", "RR", "BYE", "TWCC"])
        #expect(Array(compound.packetSlices).map(\.count) == [52, 32, 20, 12, 28, 28, 44, 8, 12, 44])
    }

    @Test func reducedSizeAcceptsFeedbackFirst() throws {
        let compound = try RTCPCompoundPacket(parsing: RTCPVectors.genericNACK)
        #expect(Array(compound) == [.genericNACK(try GenericNACK(parsing: RTCPVectors.genericNACK))])
        #expect(throws: RTCPParseError.invalidFirstPacket(.transportLayerFeedback)) {
            try RTCPCompoundPacket(parsing: RTCPVectors.genericNACK, validation: .rfc3550)
        }
        var fir = RTCPVectors.pictureLossIndication
        fir[1] = 192  // RFC 2032 FIR: not a type RFC 3550 or 5506 allows first
        #expect(throws: RTCPParseError.invalidFirstPacket(RTCPPacketType(rawValue: 192))) {
            try RTCPCompoundPacket(parsing: fir)
        }
    }

    @Test func unknownTypesPassThrough() throws {
        let app: [UInt8] = [0x81, 0xCC, 0x00, 0x03, 0, 0, 0, 1, 0x54, 0x45, 0x53, 0x54, 1, 2, 3, 4]
        let xr: [UInt8] = [0x80, 0xCF, 0x00, 0x01, 0, 0, 0, 9]
        let compound = try RTCPCompoundPacket(parsing: RTCPVectors.receiverReport + app + xr)
        let packets = Array(compound)
        #expect(packets.count == 3)
        #expect(packets[1] == .unknown(type: .applicationDefined, format: 1, packet: app[...]))
        guard case .unknown(.extendedReport, 0, let bytes) = packets[2] else {
            Issue.record("expected XR as unknown")
            return
        }
        #expect(Array(bytes) == xr)
    }

    @Test func malformedMemberDoesNotHideTheOthers() throws {
        var badNACK = RTCPVectors.genericNACK.prefix(12) + []
        badNACK[3] = 2  // a NACK without FCI
        let compound = try RTCPCompoundPacket(parsing: RTCPVectors.receiverReport + Array(badNACK) + RTCPVectors.goodbye)
        let packets = Array(compound)
        #expect(packets.count == 3)
        #expect(packets[1] == .malformed(type: .transportLayerFeedback, format: 1, error: .malformedBody))
        #expect(packets[2] == .goodbye(try Goodbye(parsing: RTCPVectors.goodbye)))
    }

    @Test func headerChecksOfAppendixA2() {
        // Lengths must add up exactly.
        #expect(throws: RTCPParseError.truncated) {
            try RTCPCompoundPacket(parsing: RTCPVectors.receiverReport + RTCPVectors.goodbye.dropLast(4))
        }
        #expect(throws: RTCPParseError.self) {
            try RTCPCompoundPacket(parsing: RTCPVectors.receiverReport + [0x80])
        }
        // Version 2 everywhere.
        var goodbye = RTCPVectors.goodbye
        goodbye[0] = 0x41
        #expect(throws: RTCPParseError.unsupportedVersion(1)) {
            try RTCPCompoundPacket(parsing: RTCPVectors.receiverReport + goodbye)
        }
        // Padding only on the last packet, and never on the first of several.
        #expect(throws: RTCPParseError.invalidFirstPacket(.transportLayerFeedback)) {
            try RTCPCompoundPacket(parsing: RTCPVectors.transportFeedback + RTCPVectors.goodbye)
        }
        // A padding count of 0 or past the header.
        var padded = RTCPVectors.receiverReport
        padded[0] |= 0x20
        padded[7] = 0
        #expect(throws: RTCPParseError.invalidPadding) { try RTCPCompoundPacket(parsing: padded) }
        padded[7] = 5
        #expect(throws: RTCPParseError.invalidPadding) { try RTCPCompoundPacket(parsing: padded) }
        #expect(throws: RTCPParseError.truncated) { try RTCPCompoundPacket(parsing: []) }
    }

    @Test func buildsACompoundFromParts() throws {
        var out: [UInt8] = []
        try ReceiverReport(ssrc: SSRC(0x0102_0304)).serialize(into: &out)
        try SourceDescription(source: SSRC(0x0102_0304), cname: "chorus")!.serialize(into: &out)
        try PictureLossIndication(senderSSRC: SSRC(0x0102_0304), mediaSSRC: SSRC(7)).serialize(into: &out)
        let packets = Array(try RTCPCompoundPacket(parsing: out, validation: .rfc3550))
        #expect(packets.count == 3)
        #expect(packets[2] == .pictureLossIndication(PictureLossIndication(senderSSRC: SSRC(0x0102_0304), mediaSSRC: SSRC(7))))
    }

    @Test func singlePacketMustMatchItsLength() {
        #expect(throws: RTCPParseError.invalidLength) { try PictureLossIndication(parsing: RTCPVectors.pictureLossIndication + [0, 0, 0, 0]) }
        #expect(throws: RTCPParseError.truncated) { try PictureLossIndication(parsing: Array(RTCPVectors.pictureLossIndication.dropLast(4))) }
    }
}

@Suite("NTP timestamps (RFC 3550 §4, RFC 4330 §3)")
struct NTPTimestampTests {
    @Test func unixEpochAndCompactForm() {
        let epoch = NTPTimestamp(unixNanoseconds: 0)
        #expect(epoch.seconds == 2_208_988_800 && epoch.fraction == 0)
        let halfSecond = NTPTimestamp(unixNanoseconds: 500_000_000)
        #expect(halfSecond.fraction == 0x8000_0000)
        let value = NTPTimestamp(rawValue: 0xE123_4567_89AB_CDEF)
        #expect(value.compact == 0x4567_89AB)  // the LSR of RFC 3550 §6.4.1
    }

    @Test(arguments: [Int64(0), 1, 999_999_999, 1_700_000_000_123_456_789, -1, -1_500_000_000, 4_000_000_000_000_000_000])
    func nanosecondsRoundTrip(_ nanoseconds: Int64) {
        #expect(NTPTimestamp(unixNanoseconds: nanoseconds).unixNanoseconds == nanoseconds)
    }

    @Test func era1AfterFebruary2036() {
        // 2036-02-07T06:28:16Z is NTP seconds 2^32: the field wraps to 0 and is read as era 1.
        let wrap = NTPTimestamp(unixNanoseconds: (1 << 32 - 2_208_988_800) * 1_000_000_000)
        #expect(wrap.seconds == 0)
        #expect(wrap.unixNanoseconds == 2_085_978_496 * 1_000_000_000)
    }

    @Test func dateConversion() {
        let timestamp = NTPTimestamp(unixNanoseconds: 1_700_000_000_250_000_000)
        #expect(abs(timestamp.date.timeIntervalSince1970 - 1_700_000_000.25) < 1e-6)
        #expect(NTPTimestamp(date: timestamp.date).seconds == timestamp.seconds)
    }

    @Test func clockReferenceMapsMediaTime() {
        let reference = NTPClockReference(mediaTime: .seconds(10), ntp: NTPTimestamp(seconds: 1000, fraction: 0))
        #expect(reference.ntp(at: .milliseconds(10_500)) == NTPTimestamp(seconds: 1000, fraction: 0x8000_0000))
        #expect(reference.ntp(at: .seconds(9)) == NTPTimestamp(seconds: 999, fraction: 0))
        #expect(reference.mediaTime(at: NTPTimestamp(seconds: 1002, fraction: 0x4000_0000)) == .milliseconds(12_250))
        #expect(reference.mediaTime(at: NTPTimestamp(seconds: 999, fraction: 0)) == .seconds(9))
        #expect(reference.mediaTime(at: NTPTimestamp(seconds: 1, fraction: 0)) == MediaTime(nanoseconds: 0))
    }

    @Test func roundTripTimeFromAReportBlock() {
        // RFC 3550 §6.4.1 example: A = 0xb710:8000 (46864.500 s), LSR = 0xb705:2000
        // (46853.125 s), DLSR = 0x0005:4000 (5.250 s) → RTT 6.125 s.
        let rtt = CompactNTP.roundTripNanoseconds(arrival: 0xB710_8000, lastSenderReport: 0xB705_2000,
                                                  delaySinceLastSenderReport: 0x0005_4000)
        #expect(rtt == 6_125_000_000)
        #expect(CompactNTP.roundTripNanoseconds(arrival: 5, lastSenderReport: 0, delaySinceLastSenderReport: 0) == nil)
        #expect(CompactNTP.roundTripNanoseconds(arrival: 10, lastSenderReport: 8, delaySinceLastSenderReport: 5) == nil)
        // Across the 16-bit seconds wrap of the compact form.
        #expect(CompactNTP.roundTripNanoseconds(arrival: 0x0000_8000, lastSenderReport: 0xFFFF_8000,
                                                delaySinceLastSenderReport: 0) == 1_000_000_000)
        #expect(CompactNTP.delay(nanoseconds: 1_000_000_000) == 0x0001_0000)
        #expect(CompactNTP.delay(nanoseconds: .max) == .max)
    }
}
