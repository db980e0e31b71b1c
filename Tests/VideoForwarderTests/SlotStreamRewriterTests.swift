import ChorusCore
import RTP
import Testing
import VideoForwarder

/// Proves a slot is one continuous RTP/VP8 stream for the subscriber whatever the publishers
/// behind it do: switches, reordering, loss and every counter's wrap-around.
@Suite("SlotStreamRewriter: one continuous slot stream across source switches and wrap-around")
struct SlotStreamRewriterTests {
    private static let slot = SSRC(0x0051_0700)
    private static let vp8Type = PayloadType(101)!

    /// A VP8 publisher packet with the usual defaults (one packet per frame).
    private func vp8Packet(
        _ ssrc: UInt32, seq: UInt16, ts: UInt32, _ kind: TestVP8Payload.Kind, pictureID: UInt16, tl0: UInt8 = 0,
        keyIndex: UInt8 = 0, longPictureID: Bool = true
    ) -> [UInt8] {
        let payload = TestVP8Payload(
            kind: kind, pictureID: pictureID, longPictureID: longPictureID, tl0: tl0, keyIndex: keyIndex)
        return TestRTPPacket(marker: true, sequenceNumber: seq, timestamp: ts, ssrc: ssrc, payload: payload.bytes).bytes
    }

    private func rewriter(sequence: UInt16 = 1_000, timestamp: UInt32 = 5_000) -> SlotStreamRewriter {
        SlotStreamRewriter(
            ssrc: Self.slot, payloadType: Self.vp8Type, initialSequenceNumber: sequence, initialTimestamp: timestamp)
    }

    /// The switch table: every forwarded packet carries the slot's SSRC and payload type, the
    /// publisher as its only CSRC, no header extension and no padding, the hand-computed
    /// sequence number, timestamp, picture ID, TL0PICIDX and KEYIDX, the publisher's marker and
    /// the descriptor's other fields, and the payload after the descriptor byte for byte;
    /// packets of the old publisher, B's packets older than its key frame and anything after
    /// `clearSource` are dropped.
    @Test func switchTableAcrossWrapArounds() throws {
        let run = try SlotSwitchScenario.run()
        #expect(run.outputs.count == SlotSwitchScenario.steps.count)
        for (step, output) in zip(SlotSwitchScenario.steps, run.outputs) {
            let input = try ParsedPacket(step.input.bytes)
            guard let expected = step.expected else {
                #expect(output == nil, "\(step.name): must be dropped")
                continue
            }
            let bytes = try #require(output, "\(step.name): must be forwarded")
            let out = try ParsedPacket(bytes)
            let outVP8 = try #require(out.vp8)
            let inVP8 = try #require(input.vp8)
            let actual = SlotSwitchScenario.Expected(
                sequenceNumber: out.header.sequenceNumber, timestamp: out.header.timestamp,
                pictureID: outVP8.pictureID ?? 0xFFFF, tl0: outVP8.tl0PictureIndex ?? 0xFF,
                keyIndex: outVP8.keyIndex ?? 0xFF)
            #expect(actual == expected, "\(step.name)")
            #expect(out.header.ssrc == SlotSwitchScenario.slotSSRC, "\(step.name)")
            #expect(out.header.payloadType == SlotSwitchScenario.slotPayloadType, "\(step.name)")
            #expect(out.csrcs == [input.header.ssrc], "\(step.name)")
            #expect(out.header.marker == input.header.marker, "\(step.name)")
            #expect(!out.header.hasExtension && !out.header.hasPadding, "\(step.name)")
            #expect(out.header.headerLength == 16 && bytes.count == 16 + input.payload.count, "\(step.name)")
            #expect(bytes[0] == 0x81, "\(step.name): V=2, P=0, X=0, CC=1")
            // The descriptor keeps its shape and the fields the rewriter does not own.
            #expect(outVP8.length == inVP8.length && outVP8.hasLongPictureID, "\(step.name)")
            #expect(outVP8.isStartOfFrame == inVP8.isStartOfFrame, "\(step.name)")
            #expect(outVP8.temporalLayerID == inVP8.temporalLayerID, "\(step.name)")
            #expect(outVP8.isLayerSync == inVP8.isLayerSync, "\(step.name)")
            #expect(out.afterDescriptor == input.afterDescriptor, "\(step.name): VP8 data changed")
        }
    }

    /// `source` follows the switches and `clearSource`.
    @Test func sourceFollowsSwitchesAndClear() throws {
        var slot = rewriter()
        #expect(slot.source == nil && slot.mapping == nil)
        try slot.switchToPacket(vp8Packet(0xA, seq: 1, ts: 1, .keyframe, pictureID: 1), at: ms(0))
        #expect(slot.source == SSRC(0xA))
        try slot.switchToPacket(vp8Packet(0xB, seq: 1, ts: 1, .keyframe, pictureID: 1), at: ms(10))
        #expect(slot.source == SSRC(0xB) && slot.mapping?.source == SSRC(0xB))
        slot.clearSource()
        #expect(slot.source == nil && slot.mapping == nil)
    }

    /// Before any switch nothing is forwarded, and a slot's first packet carries the initial
    /// sequence number and the initial timestamp + 1 (the minimum advance).
    @Test func firstPacketStartsAtTheInitialValues() throws {
        var slot = rewriter(sequence: 65_535, timestamp: 0xFFFF_FFFF)
        let key = vp8Packet(0xA, seq: 777, ts: 123_456, .keyframe, pictureID: 4_321, tl0: 9, keyIndex: 3)
        #expect(try slot.forward(key, at: ms(0)) == nil)
        try slot.switchToPacket(key, at: ms(0))
        let out = try ParsedPacket(try #require(try slot.forward(key, at: ms(0))))
        #expect(out.header.sequenceNumber == 65_535)
        #expect(out.header.timestamp == 0)
        // No earlier stream to continue: the publisher's VP8 fields pass unchanged.
        #expect(out.vp8?.pictureID == 4_321 && out.vp8?.tl0PictureIndex == 9 && out.vp8?.keyIndex == 3)
        let next = try ParsedPacket(
            try #require(try slot.forward(vp8Packet(0xA, seq: 778, ts: 126_456, .interframe, pictureID: 4_322), at: ms(33))))
        #expect(next.header.sequenceNumber == 0 && next.header.timestamp == 3_000)
    }

    /// The timestamp at a switch advances by the wall-clock gap at 90 kHz (5 s → 450 000), by
    /// at least 1 tick when no time passed or the clock went backwards, and by at most 10 s.
    @Test(arguments: [
        (UInt64(5_000), UInt32(450_000)), (0, 1), (1, 90), (60_000, 900_000),
    ])
    func switchTimestampAdvance(gapMilliseconds: UInt64, ticks: UInt32) throws {
        var slot = rewriter(timestamp: 0xFFFF_0000)
        let start: UInt64 = 100_000
        let key = vp8Packet(0xA, seq: 10, ts: 90_000, .keyframe, pictureID: 1)
        try slot.switchToPacket(key, at: ms(start))
        let first = try ParsedPacket(try #require(try slot.forward(key, at: ms(start))))
        let keyB = vp8Packet(0xB, seq: 500, ts: 7, .keyframe, pictureID: 1)
        try slot.switchToPacket(keyB, at: ms(start + gapMilliseconds))
        let second = try ParsedPacket(try #require(try slot.forward(keyB, at: ms(start + gapMilliseconds))))
        #expect(second.header.timestamp == first.header.timestamp &+ ticks)
        #expect(second.header.sequenceNumber == first.header.sequenceNumber &+ 1)
    }

    /// A switch whose clock reads earlier than the last packet (a stale `now`) still advances
    /// the timestamp by exactly 1.
    @Test func switchWithAnEarlierClockAdvancesOneTick() throws {
        var slot = rewriter(timestamp: 40)
        let key = vp8Packet(0xA, seq: 10, ts: 90_000, .keyframe, pictureID: 1)
        try slot.switchToPacket(key, at: ms(1_000))
        _ = try slot.forward(key, at: ms(1_000))  // written with ts 41
        let keyB = vp8Packet(0xB, seq: 500, ts: 7, .keyframe, pictureID: 1)
        try slot.switchToPacket(keyB, at: ms(900))
        let out = try ParsedPacket(try #require(try slot.forward(keyB, at: ms(900))))
        #expect(out.header.timestamp == 42)
    }

    /// Reordered packets of the current source get the same offsets as in order, and they do
    /// not pull the continuation point back: the next publisher follows the newest sequence
    /// number, timestamp, picture ID and TL0PICIDX written, timed from the last packet written.
    @Test func latePacketsDoNotPullTheContinuationBack() throws {
        var slot = rewriter(sequence: 1_000, timestamp: 5_000)
        let key = vp8Packet(0xA, seq: 100, ts: 1_000, .keyframe, pictureID: 50, tl0: 10, keyIndex: 5)
        try slot.switchToPacket(key, at: ms(0))
        let outputs = try [
            (key, UInt64(0)),
            (vp8Packet(0xA, seq: 102, ts: 7_000, .interframe, pictureID: 52, tl0: 12, keyIndex: 5), 66),
            (vp8Packet(0xA, seq: 101, ts: 4_000, .interframe, pictureID: 51, tl0: 11, keyIndex: 5), 70),
        ].map { packet, at in try ParsedPacket(try #require(try slot.forward(packet, at: ms(at)))) }
        #expect(outputs.map(\.header.sequenceNumber) == [1_000, 1_002, 1_001])
        #expect(outputs.map(\.header.timestamp) == [5_001, 11_001, 8_001])
        #expect(outputs.map { $0.vp8?.pictureID } == [50, 52, 51])
        #expect(outputs.map { $0.vp8?.tl0PictureIndex } == [10, 12, 11])

        let keyB = vp8Packet(0xB, seq: 500, ts: 123_456, .keyframe, pictureID: 900, tl0: 77, keyIndex: 20)
        try slot.switchToPacket(keyB, at: ms(100))
        let b = try ParsedPacket(try #require(try slot.forward(keyB, at: ms(100))))
        #expect(b.header.sequenceNumber == 1_003)
        #expect(b.header.timestamp == 11_001 + 2_700)  // 30 ms after the last packet written (at 70 ms)
        #expect(b.vp8?.pictureID == 53)
        #expect(b.vp8?.tl0PictureIndex == 13)
        #expect(b.vp8?.keyIndex == 6)
    }

    /// KEYIDX too continues from the newest value written: a packet of an older key frame
    /// arriving late must not make the next publisher's key frame reuse the current KEYIDX.
    @Test func lateOlderKeyIndexDoesNotRewindTheNextSwitch() throws {
        var slot = rewriter()
        let key = vp8Packet(0xA, seq: 100, ts: 0, .keyframe, pictureID: 1, tl0: 1, keyIndex: 5)
        try slot.switchToPacket(key, at: ms(0))
        _ = try #require(try slot.forward(key, at: ms(0)))
        let newKey = vp8Packet(0xA, seq: 110, ts: 30_000, .keyframe, pictureID: 11, tl0: 11, keyIndex: 6)
        #expect(try ParsedPacket(try #require(try slot.forward(newKey, at: ms(330)))).vp8?.keyIndex == 6)
        // Packet 109 (still of the key frame with KEYIDX 5) arrives after 110.
        let late = vp8Packet(0xA, seq: 109, ts: 27_000, .interframe, pictureID: 10, tl0: 10, keyIndex: 5)
        #expect(try ParsedPacket(try #require(try slot.forward(late, at: ms(335)))).vp8?.keyIndex == 5)

        let keyB = vp8Packet(0xB, seq: 9, ts: 0, .keyframe, pictureID: 300, tl0: 30, keyIndex: 20)
        try slot.switchToPacket(keyB, at: ms(400))
        let b = try ParsedPacket(try #require(try slot.forward(keyB, at: ms(400))))
        #expect(b.vp8?.pictureID == 12 && b.vp8?.tl0PictureIndex == 12)
        #expect(b.vp8?.keyIndex == 7, "the key frame after KEYIDX 6 must carry 7")
    }

    /// The publisher's packets older than its switch key frame are dropped even across the
    /// sequence number wrap (key frame 0, late packet 65535), newer ones across it are kept.
    @Test func olderThanKeyFrameAcrossTheWrapIsDropped() throws {
        var slot = rewriter(sequence: 300)
        let key = vp8Packet(0xB, seq: 0, ts: 9_000, .keyframe, pictureID: 7)
        try slot.switchToPacket(key, at: ms(0))
        #expect(try slot.forward(key, at: ms(0)) != nil)
        #expect(try slot.forward(vp8Packet(0xB, seq: 65_535, ts: 6_000, .interframe, pictureID: 6), at: ms(1)) == nil)
        #expect(try slot.forward(vp8Packet(0xB, seq: 65_000, ts: 3_000, .interframe, pictureID: 5), at: ms(1)) == nil)
        let next = try #require(try slot.forward(vp8Packet(0xB, seq: 1, ts: 12_000, .interframe, pictureID: 8), at: ms(33)))
        #expect(try RTPHeader(parsing: next).sequenceNumber == 301)
    }

    /// Switching to the publisher the slot already shows (on its new key frame) continues the
    /// stream and drops its packets from before that key frame.
    @Test func switchingToTheSameSourceAgain() throws {
        var slot = rewriter(sequence: 0, timestamp: 0)
        let key = vp8Packet(0xA, seq: 40, ts: 3_000, .keyframe, pictureID: 100)
        try slot.switchToPacket(key, at: ms(0))
        _ = try slot.forward(key, at: ms(0))  // slot seq 0, ts 1
        _ = try slot.forward(vp8Packet(0xA, seq: 41, ts: 6_000, .interframe, pictureID: 101), at: ms(33))  // 1, 3001
        // 42 and 43 lost; 44 is a new key frame and the room re-switches on it.
        let key2 = vp8Packet(0xA, seq: 44, ts: 15_000, .keyframe, pictureID: 104)
        try slot.switchToPacket(key2, at: ms(133))
        let out = try ParsedPacket(try #require(try slot.forward(key2, at: ms(133))))
        #expect(out.header.sequenceNumber == 2)
        #expect(out.header.timestamp == 3_001 + 9_000)
        #expect(out.vp8?.pictureID == 102)
        #expect(try slot.forward(vp8Packet(0xA, seq: 43, ts: 12_000, .interframe, pictureID: 103), at: ms(140)) == nil)
    }

    /// A short (7-bit, M=0) picture ID is rewritten in its own width, and a short-ID publisher
    /// whose picture ID wraps 127 → 0 still moves the continuation point: the next publisher's
    /// picture ID follows the last one written.
    @Test func sevenBitPictureIDsWrapAndContinue() throws {
        var slot = rewriter()
        let keyA = vp8Packet(0xA, seq: 1, ts: 0, .keyframe, pictureID: 1_000)
        try slot.switchToPacket(keyA, at: ms(0))
        _ = try slot.forward(keyA, at: ms(0))  // picture ID 1000
        // B: 7-bit picture IDs 120…127, 0…2 → written as 1001… in 7 bits: 105…115.
        var written: [UInt16] = []
        for (index, pictureID) in ([UInt16](120...127) + [0, 1, 2]).enumerated() {
            let packet = vp8Packet(
                0xB, seq: UInt16(200 + index), ts: UInt32(3_000 * index), index == 0 ? .keyframe : .interframe,
                pictureID: pictureID, longPictureID: false)
            if index == 0 { try slot.switchToPacket(packet, at: ms(10)) }
            let out = try ParsedPacket(try #require(try slot.forward(packet, at: ms(10 + 33 * UInt64(index)))))
            #expect(out.vp8?.hasLongPictureID == false)
            written.append(try #require(out.vp8?.pictureID))
        }
        #expect(written == [UInt16](105...115))
        let keyC = vp8Packet(0xC, seq: 9, ts: 0, .keyframe, pictureID: 7_000)
        try slot.switchToPacket(keyC, at: ms(400))
        let c = try ParsedPacket(try #require(try slot.forward(keyC, at: ms(400))))
        // 1000 + 11 pictures → 1012 (low 7 bits 116, after B's last 115).
        #expect(c.vp8?.pictureID == 1_012)
    }

    /// The KEYIDX rewrite keeps TID and Y of the same byte.
    @Test func keyIndexRewriteKeepsTemporalLayerAndSync() throws {
        var slot = rewriter()
        let keyA = vp8Packet(0xA, seq: 1, ts: 0, .keyframe, pictureID: 1, keyIndex: 30)
        try slot.switchToPacket(keyA, at: ms(0))
        _ = try slot.forward(keyA, at: ms(0))
        let payload = TestVP8Payload(
            kind: .keyframe, pictureID: 9, tl0: 3, temporalLayer: 2, layerSync: true, keyIndex: 4)
        let keyB = TestRTPPacket(sequenceNumber: 5, timestamp: 5, ssrc: 0xB, payload: payload.bytes).bytes
        try slot.switchToPacket(keyB, at: ms(10))
        let out = try ParsedPacket(try #require(try slot.forward(keyB, at: ms(10))))
        #expect(out.vp8?.keyIndex == 31)
        #expect(out.vp8?.temporalLayerID == 2 && out.vp8?.isLayerSync == true)
        #expect(out.payload[out.payload.startIndex + 5] == 0xA0 | 31)
    }

    /// H.264 (no VP8 descriptor): the payload passes unchanged, sequence numbers and timestamps
    /// are rewritten and continue across a switch.
    @Test func h264PayloadPassesUnchanged() throws {
        var slot = SlotStreamRewriter(
            ssrc: Self.slot, payloadType: PayloadType(102)!, initialSequenceNumber: 0, initialTimestamp: 0)
        let idrA: [UInt8] = [0x65, 0x88, 0x84, 0x00, 0x33]
        let keyA = TestRTPPacket(payloadType: 107, sequenceNumber: 9, timestamp: 100, ssrc: 0xA, padding: 3, payload: idrA)
        try slot.switchToPacket(keyA.bytes, at: ms(0), vp8: false)
        let a = try ParsedPacket(try #require(try slot.forward(keyA.bytes, at: ms(0), vp8: false)), vp8: false)
        #expect(Array(a.payload) == idrA)
        #expect(a.header.payloadType == PayloadType(102)! && a.header.sequenceNumber == 0 && a.header.timestamp == 1)
        let stapB: [UInt8] = [0x78, 0x00, 0x02, 0x67, 0x42, 0x00, 0x02, 0x65, 0x88]
        let keyB = TestRTPPacket(sequenceNumber: 60_000, timestamp: 1, ssrc: 0xB, payload: stapB)
        try slot.switchToPacket(keyB.bytes, at: ms(20), vp8: false)
        let b = try ParsedPacket(try #require(try slot.forward(keyB.bytes, at: ms(20), vp8: false)), vp8: false)
        #expect(Array(b.payload) == stapB)
        #expect(b.header.sequenceNumber == 1 && b.header.timestamp == 1 + 1_800)
        #expect(b.csrcs == [SSRC(0xB)])
    }
}
