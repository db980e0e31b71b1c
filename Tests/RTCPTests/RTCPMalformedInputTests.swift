import ChorusCore
import ChorusTestSupport
import RTCP
import Testing

/// Peer input must never trap: every RTCP parser throws or yields values for truncations,
/// lying length and count fields, bit flips and random bytes.
@Suite("RTCP parsers on malformed input")
struct RTCPMalformedInputTests {
    /// Runs every parser on `bytes` and reads everything they expose.
    static func exercise(_ bytes: ArraySlice<UInt8>) {
        if let compound = try? RTCPCompoundPacket(parsing: bytes) {
            for packet in compound { touch(packet) }
        }
        if let packet = try? RTCPPacket(parsing: bytes) { touch(packet) }
        _ = try? SenderReport(parsing: bytes)
        _ = try? ReceiverReport(parsing: bytes)
        _ = try? SourceDescription(parsing: bytes).chunks.map { Array($0) }
        _ = try? Goodbye(parsing: bytes)
        _ = try? Array(GenericNACK(parsing: bytes).lostSequenceNumbers)
        _ = try? PictureLossIndication(parsing: bytes)
        _ = try? FullIntraRequest(parsing: bytes).entries.map(\.ssrc)
        _ = try? ReceiverEstimatedMaximumBitrate(parsing: bytes)
        _ = try? TransportFeedback(parsing: bytes).packets.map(\.arrivalTimeMicroseconds)
    }

    static func touch(_ packet: RTCPPacket) {
        var out: [UInt8] = []
        switch packet {
        case .senderReport(let report):
            _ = Array(report.reportBlocks)
            try? report.serialize(into: &out)
        case .receiverReport(let report):
            _ = Array(report.reportBlocks)
            try? report.serialize(into: &out)
        case .sourceDescription(let sdes):
            for chunk in sdes.chunks { _ = chunk.cname; _ = Array(chunk) }
            try? sdes.serialize(into: &out)
        case .goodbye(let bye):
            _ = bye.reasonString
            try? bye.serialize(into: &out)
        case .genericNACK(let nack):
            _ = Array(nack.lostSequenceNumbers)
            try? nack.serialize(into: &out)
        case .pictureLossIndication(let pli): try? pli.serialize(into: &out)
        case .fullIntraRequest(let fir): try? fir.serialize(into: &out)
        case .receiverEstimatedMaximumBitrate(let remb): try? remb.serialize(into: &out)
        case .transportFeedback(let feedback):
            #expect(Array(feedback.packets).count == Int(feedback.packetStatusCount))
        case .unknown, .malformed: break
        }
    }

    @Test func everyTruncationIsRefused() {
        for vector in RTCPVectors.all {
            for prefix in truncations(of: vector) {
                #expect(throws: RTCPParseError.self, "\(prefix)") { try RTCPPacket(parsing: prefix) }
                #expect(throws: RTCPParseError.self) { try RTCPCompoundPacket(parsing: prefix) }
                Self.exercise(prefix[...])
            }
        }
    }

    @Test func truncatedLastMemberOfACompound() {
        let datagram = RTCPVectors.senderReport + RTCPVectors.sourceDescription + RTCPVectors.transportFeedback
        for cut in 1..<RTCPVectors.transportFeedback.count {
            #expect(throws: RTCPParseError.self) { try RTCPCompoundPacket(parsing: Array(datagram.dropLast(cut))) }
        }
    }

    @Test func lyingLengthAndCountFields() {
        for vector in RTCPVectors.all {
            for length in 0...UInt16(40) where Int(length) != vector.count / 4 - 1 {
                var bytes = vector
                bytes[2] = UInt8(length >> 8)
                bytes[3] = UInt8(length & 0xFF)
                #expect(throws: RTCPParseError.self) { try RTCPPacket(parsing: bytes) }
                Self.exercise(bytes[...])
            }
            for count: UInt8 in 0...31 {
                var bytes = vector
                bytes[0] = bytes[0] & 0xE0 | count
                Self.exercise(bytes[...])
            }
        }
        for statusCount: UInt16 in [245, 300, 1000, 0xFFFF] {
            var bytes = RTCPVectors.transportFeedbackZeroPadded
            bytes[14] = UInt8(statusCount >> 8)
            bytes[15] = UInt8(statusCount & 0xFF)
            #expect(throws: RTCPParseError.self) { try TransportFeedback(parsing: bytes) }
        }
        for padding: UInt8 in [0, 41, 255] {
            var bytes = RTCPVectors.transportFeedback
            bytes[bytes.count - 1] = padding
            #expect(throws: RTCPParseError.invalidPadding) { try RTCPPacket(parsing: bytes) }
        }
    }

    @Test func bitFlipsOfValidPackets() {
        var generator = SplitMix64(seed: 0x3550)
        for vector in RTCPVectors.all {
            for _ in 0..<2_000 {
                var bytes = vector
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let index = Int.random(in: 0..<bytes.count, using: &generator)
                    bytes[index] ^= UInt8(1) << UInt8.random(in: 0...7, using: &generator)
                }
                Self.exercise(bytes[...])
            }
        }
    }

    @Test func randomBytes() {
        var generator = SplitMix64(seed: 0xFEED_BEEF)
        let types: [UInt8] = [200, 201, 202, 203, 204, 205, 206, 207]
        for _ in 0..<20_000 {
            let words = Int.random(in: 1...12, using: &generator)
            var bytes = generator.bytes(count: 4 * words + (Bool.random(using: &generator) ? 0 : Int.random(in: 1...3, using: &generator)))
            if Bool.random(using: &generator) {
                // A plausible header so parsing reaches the bodies.
                bytes[0] = 0x80 | bytes[0] & 0x3F
                bytes[1] = types.randomElement(using: &generator)!
                bytes[2] = 0
                bytes[3] = UInt8(words - 1)
            }
            Self.exercise(bytes[...])
        }
    }

    @Test func randomTransportFeedbackBodies() {
        var generator = SplitMix64(seed: 0x7CC)
        for _ in 0..<10_000 {
            let words = Int.random(in: 4...20, using: &generator)
            var bytes = generator.bytes(count: 4 * words)
            bytes[0] = 0x8F | (Bool.random(using: &generator) ? 0x20 : 0)
            bytes[1] = 205
            bytes[2] = 0
            bytes[3] = UInt8(words - 1)
            bytes[14] = 0  // keep status counts small enough to be satisfiable sometimes
            Self.exercise(bytes[...])
        }
    }
}
