import ChorusCore
import RTP
import Testing

@Suite("RTP header extensions (RFC 8285) and their values")
struct RTPHeaderExtensionTests {
    @Test func oneByteElementsInOrder() throws {
        let packet = try RTPPacket(parsing: RTPVectors.full)
        let elements = packet.headerExtensions.map { ($0.id, Array($0.data)) }
        #expect(elements.map(\.0) == [1, 2, 3, 4])
        #expect(elements.map(\.1) == [[0xAA], [0x12, 0x34, 0x56], [0xAB, 0xCD], [0x61, 0x31]])
        #expect(packet.headerExtensions.form == .oneByte)
    }

    @Test func twoByteElementsWithEmptyDataAndPadding() throws {
        let packet = try RTPPacket(parsing: RTPVectors.twoByte)
        #expect(packet.headerExtensions.form == .twoByte(appBits: 3))
        let elements = packet.headerExtensions.map { ($0.id, Array($0.data)) }
        #expect(elements.map(\.0) == [20, 5])
        #expect(elements.map(\.1) == [[], [0x78, 0x79, 0x7A]])
        #expect(Array(packet.payload) == [0x42])
    }

    @Test func reservedID15EndsProcessing() throws {
        let packet = try RTPPacket(parsing: RTPVectors.reservedID15)
        #expect(packet.headerExtensions.map(\.id) == [1])
        #expect(packet.headerExtensions.first(id: 2) == nil)
    }

    @Test func typedValuesThroughTheMap() throws {
        let packet = try RTPPacket(parsing: RTPVectors.full)
        let map = RTPHeaderExtensionMap(mid: 4, audioLevel: 1, transportSequenceNumber: 3, absoluteSendTime: 2)
        let values = map.decode(packet.headerExtensions)
        #expect(values.audioLevel == AudioLevelIndication(voiceActivity: true, level: 42))
        #expect(values.absoluteSendTime == AbsoluteSendTime(rawValue: 0x12_3456))
        #expect(values.transportSequenceNumber == 0xABCD)
        #expect(values.mid.map(Array.init) == Array("a1".utf8))
        #expect(values.midString == "a1")
        #expect(values.csrcAudioLevels == nil)
    }

    @Test func mapIgnoresUnnegotiatedIDs() throws {
        let packet = try RTPPacket(parsing: RTPVectors.full)
        let values = RTPHeaderExtensionMap(transportSequenceNumber: 9).decode(packet.headerExtensions)
        #expect(values == RTPHeaderExtensionValues())
    }

    @Test func audioLevelByte() {
        #expect(AudioLevelIndication(data: [0xFF][...]) == AudioLevelIndication(voiceActivity: true, level: 127))
        #expect(AudioLevelIndication(data: [0x00][...]) == AudioLevelIndication(voiceActivity: false, level: 0))
        #expect(AudioLevelIndication(data: [][...]) == nil)
        #expect(AudioLevelIndication(voiceActivity: false, level: 200).level == 127)
        #expect(AudioLevelIndication(voiceActivity: true, level: 3).byte == 0x83)
    }

    @Test func csrcAudioLevelsIgnoreReservedBit() {
        let levels = CSRCAudioLevels(data: [0x05, 0x80 | 0x10, 0x7F][...])
        #expect(Array(levels) == [5, 16, 127])
    }

    @Test func absoluteSendTimeFixedPoint() {
        // 1.5 s = 1 << 18 + 1 << 17.
        #expect(AbsoluteSendTime(nanoseconds: 1_500_000_000).rawValue == 0x06_0000)
        #expect(AbsoluteSendTime(rawValue: 0x06_0000).nanoseconds == 1_500_000_000)
        // Whole seconds wrap at 64.
        #expect(AbsoluteSendTime(nanoseconds: 65_000_000_000).rawValue == 1 << 18)
        #expect(AbsoluteSendTime(rawValue: 0xFFFF_FFFF).rawValue == 0xFF_FFFF)
        #expect(AbsoluteSendTime(nanoseconds: .max).rawValue <= 0xFF_FFFF)
        #expect(AbsoluteSendTime(data: [0x01, 0x02][...]) == nil)
    }

    @Test func midTrimsTrailingZeros() {
        #expect(RTPHeaderExtensionData.midString(Array("video0".utf8)[...] + [0, 0]) == "video0")
        #expect(RTPHeaderExtensionData.mid([0, 0][...]) == nil)
        #expect(RTPHeaderExtensionData.midString([0xFF, 0xFE][...]) == nil)
        #expect(RTPHeaderExtensionData.transportSequenceNumber([0x01][...]) == nil)
        #expect(RTPHeaderExtensionData.transportSequenceNumber([0x01, 0x02, 0x80, 0x01][...]) == 0x0102)
    }
}

@Suite("RTP header serialization")
struct RTPHeaderSerializationTests {
    static let fullFields = RTPHeaderFields(
        payloadType: PayloadType(96)!, sequenceNumber: 65_535, timestamp: 90_000, ssrc: SSRC(0xCAFE_BABE),
        csrcs: [SSRC(0x0102_0304), SSRC(0x0506_0708)],
        extensions: [
            .init(id: 1, value: .audioLevel(AudioLevelIndication(voiceActivity: true, level: 42))),
            .init(id: 2, value: .absoluteSendTime(AbsoluteSendTime(rawValue: 0x12_3456))),
            .init(id: 3, value: .transportSequenceNumber(0xABCD)),
            .init(id: 4, value: .mid("a1")),
        ])

    @Test func writesTheSameBytesAsTheVector() throws {
        var out: [UInt8] = []
        try Self.fullFields.serialize(into: &out)
        // The vector's header, with the padding bit cleared (padding is the caller's business).
        var expected = Array(RTPVectors.full.prefix(36))
        expected[0] &= ~0x20
        #expect(out == expected)
    }

    @Test func roundTripsThroughTheParser() throws {
        var out: [UInt8] = [0xEE]  // appends after what is already there
        var fields = Self.fullFields
        fields.marker = true
        fields.extensions.append(.init(id: 14, value: .csrcAudioLevels([10, 20, 200])))
        try fields.serialize(into: &out)
        out.append(contentsOf: [9, 8, 7])
        let packet = try RTPPacket(parsing: out[1...])
        #expect(packet.header.marker)
        #expect(packet.header.sequenceNumber == 65_535)
        #expect(Array(packet.payload) == [9, 8, 7])
        let values = RTPHeaderExtensionMap(mid: 4, csrcAudioLevels: 14).decode(packet.headerExtensions)
        #expect(values.csrcAudioLevels.map(Array.init) == [10, 20, 127])
        #expect(values.midString == "a1")
    }

    @Test func switchesToTwoByteFormWhenNeeded() throws {
        let fields = RTPHeaderFields(
            payloadType: PayloadType(100)!, sequenceNumber: 1, timestamp: 2, ssrc: SSRC(3),
            extensions: [.init(id: 20, value: .bytes([])), .init(id: 5, value: .bytes(Array("xyz".utf8)))])
        #expect(fields.extensionForm == .twoByte(appBits: 0))
        var out: [UInt8] = []
        try fields.serialize(into: &out)
        let packet = try RTPPacket(parsing: out + [0x42])
        #expect(packet.headerExtensions.map(\.id) == [20, 5])
        #expect(packet.headerExtensions.first(id: 5).map(Array.init) == Array("xyz".utf8))
        // 12 + 4 + (2 + 0) + (2 + 3) = 23, padded to 24.
        #expect(out.count == 24)
    }

    @Test func longMidNeedsTwoByteForm() throws {
        let mid = String(repeating: "m", count: 17)
        let fields = RTPHeaderFields(payloadType: PayloadType(0)!, sequenceNumber: 0, timestamp: 0, ssrc: SSRC(0),
                                     extensions: [.init(id: 1, value: .mid(mid))])
        #expect(fields.extensionForm == .twoByte(appBits: 0))
        var out: [UInt8] = []
        try fields.serialize(into: &out)
        let packet = try RTPPacket(parsing: out + [0])
        #expect(RTPHeaderExtensionMap(mid: 1).decode(packet.headerExtensions).midString == mid)
    }

    @Test func writesIntoARawBuffer() throws {
        var storage = [UInt8](repeating: 0xFF, count: 64)
        let written = try storage.withUnsafeMutableBytes { try Self.fullFields.serialize(into: $0) }
        #expect(written == 36)
        #expect(try RTPHeader(parsing: Array(storage.prefix(written)) + [1]).ssrc == SSRC(0xCAFE_BABE))
        var small = [UInt8](repeating: 0, count: 35)
        #expect(throws: RTPSerializationError.bufferTooSmall(needed: 36)) {
            try small.withUnsafeMutableBytes { try Self.fullFields.serialize(into: $0) }
        }
    }

    @Test func refusesWhatTheWireCannotCarry() {
        var fields = RTPHeaderFields(payloadType: PayloadType(0)!, sequenceNumber: 0, timestamp: 0, ssrc: SSRC(0))
        fields.csrcs = Array(repeating: SSRC(1), count: 16)
        var out: [UInt8] = []
        #expect(throws: RTPSerializationError.tooManyCSRCs(16)) { try fields.serialize(into: &out) }
        fields.csrcs = []
        fields.extensions = [.init(id: 0, value: .bytes([1]))]
        #expect(throws: RTPSerializationError.invalidExtensionID(0)) { try fields.serialize(into: &out) }
        fields.extensions = [.init(id: 3, value: .bytes(Array(repeating: 1, count: 256)))]
        #expect(throws: RTPSerializationError.extensionDataTooLong(id: 3, length: 256)) {
            try fields.serialize(into: &out)
        }
        #expect(out.isEmpty)
    }

    @Test func noExtensionsMeansNoXBit() throws {
        var out: [UInt8] = []
        let fields = RTPHeaderFields(marker: true, payloadType: PayloadType(111)!, sequenceNumber: 0x1234,
                                     timestamp: 0xDEAD_BEEF, ssrc: SSRC(0x1122_3344))
        try fields.serialize(into: &out)
        #expect(out == Array(RTPVectors.minimal.prefix(12)))
    }
}
