import AudioMixer
import ChorusCore
import RTP
import Testing

@Suite("OutboundAudioStream: one continuous RTP stream per recipient (RFC 3550 mixer)")
struct OutboundAudioStreamTests {
    private static let opus = PayloadType(111)!

    private func stream(levelsID: UInt8? = 5) -> OutboundAudioStream {
        OutboundAudioStream(
            ssrc: SSRC(0xDEAD_BEEF), payloadType: Self.opus, initialSequenceNumber: 65_535,
            initialTimestamp: 4_294_967_000, csrcAudioLevelExtensionID: levelsID)
    }

    @Test func continuityAcrossMixSwitches() throws {
        // B talks for a while, so it switches from the full mix to its own mix and back.
        var room = MixerTestRoom()
        room.join("A", .tone(MixerTestTone(frequency: 440, amplitude: 0.3)))
        room.join("B", .silence)
        room.join("C", .silence)
        var kinds: [MixPlan<String>.Mix] = []
        for tick in 0..<80 {
            let talks = (10..<30).contains(tick)
            room.sources["B"] = talks ? .tone(MixerTestTone(frequency: 880, amplitude: 0.3)) : .silence
            kinds.append(try room.runTick().mix(for: "B")!.kind)
        }
        #expect(kinds.contains(.full) && kinds.contains(.minusOne("B")))
        #expect(kinds.firstIndex(of: .minusOne("B")) == 10)

        let packets = room.packets["B"]!
        #expect(packets.count == 80)
        for (index, packet) in packets.enumerated() {
            #expect(packet.header.ssrc == room.streams["B"]!.ssrc)
            #expect(packet.header.payloadType == PayloadType(111)!)
            #expect(packet.header.sequenceNumber == UInt16(truncatingIfNeeded: 65_530 + index))
            #expect(packet.header.timestamp == UInt32(truncatingIfNeeded: 4_294_960_000 + 960 * index))
            #expect(packet.header.marker == (index == 0))
        }
    }

    @Test func csrcListAndLevelsFollowTheMix() throws {
        var room = MixerTestRoom()
        room.join("A", .tone(MixerTestTone(frequency: 440, amplitude: 0.5)))
        room.join("B", .tone(MixerTestTone(frequency: 880, amplitude: 0.1)))
        room.join("C", .silence)
        try room.run(3)
        let map = RTPHeaderExtensionMap(csrcAudioLevels: MixerTestRoom.extensionID)
        func last(_ id: String) -> (csrcs: [SSRC], levels: [UInt8]) {
            let packet = room.packets[id]!.last!
            let levels = map.decode(packet.headerExtensions).csrcAudioLevels.map(Array.init) ?? []
            return (Array(packet.csrcs), levels)
        }
        #expect(last("C").csrcs == [room.ssrcs["A"]!, room.ssrcs["B"]!])
        #expect(last("C").levels == [9, 23])
        #expect(last("A").csrcs == [room.ssrcs["B"]!] && last("A").levels == [23])
        #expect(last("B").csrcs == [room.ssrcs["A"]!] && last("B").levels == [9])
    }

    @Test func headerBytesMatchTheRTPTargetsParserAndSerializer() throws {
        var outbound = stream()
        let csrcs = (1...3).map { SSRC(UInt32($0)) }
        var bytes: [UInt8] = []
        outbound.packet(payload: [0xAA, 0xBB], csrcs: csrcs, csrcAudioLevels: [10, 20, 200], into: &bytes)
        let expected = RTPHeaderFields(
            marker: true, payloadType: Self.opus, sequenceNumber: 65_535, timestamp: 4_294_967_000,
            ssrc: SSRC(0xDEAD_BEEF), csrcs: csrcs,
            extensions: [RTPHeaderExtensionElement(id: 5, value: .csrcAudioLevels([10, 20, 127]))])
        var reference: [UInt8] = []
        try expected.serialize(into: &reference)
        #expect(bytes == reference + [0xAA, 0xBB])
        #expect(bytes.count == 12 + 12 + 8 + 2)
    }

    @Test func sequenceAndTimestampWrapAndSkipMarksTheNextTalkSpurt() throws {
        var outbound = stream(levelsID: nil)
        var headers: [RTPHeader] = []
        func send() throws {
            var bytes: [UInt8] = []
            outbound.packet(payload: [1, 2, 3], into: &bytes)
            headers.append(try RTPHeader(parsing: bytes))
        }
        try send()
        try send()
        outbound.skipFrame(3)
        outbound.skipFrame(-1)
        try send()
        #expect(headers.map(\.sequenceNumber) == [65_535, 0, 1])
        let timestamps: [UInt32] = [4_294_967_000, 664, 664 + 960 * 4]  // 1 sent + 3 skipped
        #expect(headers.map(\.timestamp) == timestamps)
        #expect(headers.map(\.marker) == [true, false, true])
        #expect(headers.allSatisfy { !$0.hasExtension && $0.csrcCount == 0 })
        #expect(outbound.packetCount == 3 && outbound.payloadOctetCount == 9)
        #expect(outbound.lastSentTimestamp == timestamps[2])
    }

    @Test func atMostFifteenCSRCs() throws {
        var outbound = stream()
        var bytes: [UInt8] = []
        let csrcs = (1...20).map { SSRC(UInt32($0)) }
        outbound.packet(payload: [9], csrcs: csrcs, csrcAudioLevels: [UInt8](repeating: 30, count: 20), into: &bytes)
        let packet = try RTPPacket(parsing: bytes)
        #expect(Array(packet.csrcs) == Array(csrcs.prefix(15)))
        let levels = RTPHeaderExtensionMap(csrcAudioLevels: 5).decode(packet.headerExtensions).csrcAudioLevels
        #expect(levels.map(Array.init) == [UInt8](repeating: 30, count: 15))
        #expect(Array(packet.payload) == [9])
    }

    /// Levels are written only when negotiated with a one-byte ID and one per CSRC.
    @Test(arguments: [(UInt8?.none, 3), (0, 3), (15, 3), (200, 3), (5, 2), (5, 0)])
    func levelsOmittedWhenTheyCannotBeWritten(id: UInt8?, levelCount: Int) throws {
        var outbound = stream(levelsID: id)
        var bytes: [UInt8] = []
        let csrcs = (1...3).map { SSRC(UInt32($0)) }
        outbound.packet(payload: [7], csrcs: csrcs, csrcAudioLevels: Array([1, 2, 3].prefix(levelCount)), into: &bytes)
        let packet = try RTPPacket(parsing: bytes)
        #expect(!packet.header.hasExtension)
        #expect(packet.csrcs.count == 3 && Array(packet.payload) == [7])
    }

    @Test func appendsToTheCallersBufferWithoutReallocating() {
        var outbound = stream()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(1_500)
        let payload = [UInt8](repeating: 0x55, count: 120)
        outbound.packet(payload: payload, csrcs: [SSRC(1)], csrcAudioLevels: [40], into: &bytes)
        let address = bytes.withUnsafeBufferPointer { $0.baseAddress }
        bytes.removeAll(keepingCapacity: true)
        outbound.packet(payload: payload, csrcs: [SSRC(1)], csrcAudioLevels: [40], into: &bytes)
        #expect(bytes.withUnsafeBufferPointer { $0.baseAddress } == address)
        #expect(bytes.count == 12 + 4 + 8 + 120)
    }
}
