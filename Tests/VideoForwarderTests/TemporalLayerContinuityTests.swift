import ChorusCore
import RTP
import Testing
import VideoForwarder

/// The sequence numbers and picture IDs a temporal layer drop removes: NACKs still find the
/// publisher's packets, reordered packets take the numbers kept for them, and every counter
/// wraps.
@Suite("Temporal layer drops: NACK mapping, reordering, wrap-around")
struct TemporalLayerContinuityTests {
    private func slot(sequence: UInt16) -> SlotStreamRewriter {
        SlotStreamRewriter(ssrc: SSRC(0x51), payloadType: PayloadType(101)!, initialSequenceNumber: sequence,
                           initialTimestamp: 4_000)
    }

    /// Every forwarded slot packet's NACK names the publisher packet it came from, and the
    /// retransmission is the original slot packet byte for byte; the slot numbers past the
    /// last one written have no mapping.
    @Test func aNACKForAForwardedPacketFindsItsPublisherPacket() throws {
        var stream = TemporalTestStream(packetsPerFrame: 3)
        var rewriter = slot(sequence: 65_500)
        rewriter.targetTemporalLayer = 1
        var cache: [UInt32: [UInt16: [UInt8]]] = [:]
        var outputs: [SlotOutput] = []
        for frame in 0..<30 {
            let packets = stream.nextFrame(keyFrame: frame == 0)
            for packet in packets { cache[0xA, default: [:]][packet.sequenceNumber] = packet.bytes }
            if frame == 0 { try rewriter.switchToPacket(packets[0].bytes, at: ms(0)) }
            outputs += try rewriter.forward(packets, at: ms(UInt64(frame) * 33))
        }
        #expect(outputs.count == 3 * 15)  // the key frame, 7 more base and 7 layer 1 frames
        expectContinuous(outputs)
        for output in outputs {
            let found = try #require(rewriter.mapping(forSlotSequence: output.sequenceNumber))
            #expect(found.sourceSequence == output.input.sequenceNumber)
            #expect(try rewriter.retransmission(of: output.sequenceNumber, from: cache) == output.parsed.bytes)
        }
        let next = try #require(outputs.last).sequenceNumber &+ 1
        #expect(rewriter.mapping(forSlotSequence: next) == nil)
    }

    /// Reordering with target 1 (frames: key, 2, 1, 2, 0, 2, 1, 2, 0; two packets each): a
    /// forwarded frame's packets swapped take the numbers kept for them; a dropped frame's
    /// packet arriving after a newer frame went out is dropped too and leaves one number
    /// unused (counted as a late drop); a layer 2 frame first seen after a newer frame is
    /// forwarded into the numbers kept for it, and the picture IDs stay continuous.
    @Test func reorderedPacketsTakeTheNumbersKeptForThem() throws {
        var stream = TemporalTestStream()
        var packets: [TemporalTestStream.Packet] = []
        for frame in 0..<9 { packets += stream.nextFrame(keyFrame: frame == 0) }
        var rewriter = slot(sequence: 20_000)
        rewriter.targetTemporalLayer = 1
        try rewriter.switchToPacket(packets[0].bytes, at: ms(0))
        let arrival = [0, 1, 2, 3, 5, 4, 6, 8, 7, 9, 12, 10, 11, 13, 14, 15, 16, 17]
        let outputs = try rewriter.forward(arrival.map { packets[$0] }, at: ms(5))
        #expect(outputs.map { $0.sequenceNumber &- 20_000 } == [0, 1, 3, 2, 5, 6, 9, 7, 8, 10, 11, 12])
        #expect(outputs.map(\.input.sequenceNumber) == [0, 1, 5, 4, 8, 9, 12, 10, 11, 13, 16, 17].map { 1_000 + $0 })
        #expect(rewriter.lateDrops == 1)
        #expect(rewriter.mapping(forSlotSequence: 20_004) == nil, "the number the late drop left unused")
        // In slot order, the picture IDs and TL0PICIDX are continuous again.
        let ordered = outputs.sorted { $0.sequenceNumber < $1.sequenceNumber }
        #expect(ordered.compactMap(\.pictureID) == [100, 100, 101, 101, 102, 102, 103, 103, 104, 104, 105, 105])
        #expect(Set(ordered.compactMap(\.tl0)) == [8, 9, 10])
        for output in outputs {
            #expect(rewriter.mapping(forSlotSequence: output.sequenceNumber)?.sourceSequence
                        == output.input.sequenceNumber)
        }
    }

    /// The publisher's sequence numbers wrap at 2^16, its 15-bit picture IDs at 2^15, its
    /// TL0PICIDX at 2^8 and the slot's own sequence numbers at 2^16, all while layers are
    /// dropped.
    @Test(arguments: [UInt8(0), 1])
    func everyCounterWrapsWhileLayersAreDropped(target: UInt8) throws {
        var stream = TemporalTestStream(sequenceNumber: 65_520, timestamp: UInt32.max - 20_000, pictureID: 32_750,
                                        tl0: 250, packetsPerFrame: 3)
        var rewriter = slot(sequence: 65_530)
        rewriter.targetTemporalLayer = target
        let key = stream.nextFrame(keyFrame: true)
        try rewriter.switchToPacket(key[0].bytes, at: ms(0))
        var outputs = try rewriter.forward(key, at: ms(0))
        for _ in 0..<80 { outputs += try rewriter.forward(stream.nextFrame(), at: ms(10)) }
        #expect(outputs.count == 3 * (target == 0 ? 21 : 41))
        expectContinuous(outputs)
        #expect(outputs.contains { $0.sequenceNumber == 0 } && outputs.contains { $0.input.sequenceNumber < 100 })
        #expect(outputs.contains { $0.pictureID == 0 } && outputs.contains { $0.tl0 == 0 })
    }

    /// Short (7-bit) picture IDs wrap at 128 and stay continuous the same way.
    @Test func sevenBitPictureIDsStayContinuous() throws {
        var stream = TemporalTestStream(pictureID: 100, longPictureID: false)
        var rewriter = slot(sequence: 1)
        rewriter.targetTemporalLayer = 1
        let key = stream.nextFrame(keyFrame: true)
        try rewriter.switchToPacket(key[0].bytes, at: ms(0))
        var outputs = try rewriter.forward(key, at: ms(0))
        for _ in 0..<120 { outputs += try rewriter.forward(stream.nextFrame(), at: ms(10)) }
        expectContinuous(outputs, long: false)
        #expect(outputs.allSatisfy { $0.parsed.vp8?.hasLongPictureID == false })
        #expect(outputs.contains { $0.pictureID == 0 })
    }
}
