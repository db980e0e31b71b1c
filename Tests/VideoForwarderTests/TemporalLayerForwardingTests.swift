import ChorusCore
import RTP
import Testing
import VideoForwarder

/// A slot that forwards only the VP8 temporal layers up to a target TID: what it drops, when
/// it goes up and down, and that the subscriber still sees one continuous stream (sequence
/// numbers, picture IDs, TL0PICIDX) whose NACKs map back to the publisher's packets.
@Suite("SlotStreamRewriter: dropping VP8 temporal layers above a target TID")
struct TemporalLayerForwardingTests {
    private func slot(sequence: UInt16 = 20_000) -> SlotStreamRewriter {
        SlotStreamRewriter(ssrc: SSRC(0x51), payloadType: PayloadType(101)!, initialSequenceNumber: sequence,
                           initialTimestamp: 4_000)
    }

    /// A slot switched to `stream`'s key frame with `target`, and that key frame's outputs.
    private func started(_ stream: inout TemporalTestStream, target: UInt8, sequence: UInt16 = 20_000) throws
        -> (SlotStreamRewriter, [SlotOutput])
    {
        var rewriter = slot(sequence: sequence)
        rewriter.targetTemporalLayer = target
        let key = stream.nextFrame(keyFrame: true)
        try rewriter.switchToPacket(key[0].bytes, at: ms(0))
        return (rewriter, try rewriter.forward(key, at: ms(0)))
    }

    /// The descriptor bytes are the RFC's: X, then I L T K, the 15-bit picture ID with M, then
    /// TL0PICIDX, then TID(2) Y(1) KEYIDX(5). A layer 2 sync frame, picture ID 0x1234.
    @Test func theTestStreamLaysOutTheDescriptorAsRFC7741Says() throws {
        var stream = TemporalTestStream(pictureID: 0x1234, tl0: 9)
        _ = stream.nextFrame()
        let packet = stream.nextFrame()[0]
        let payload = Array(try RTPPacket(parsing: packet.bytes).payload)
        #expect(Array(payload.prefix(6)) == [0x90, 0xF0, 0x80 | 0x12, 0x35, 9, 0b1010_0011])
        let descriptor = try VP8PayloadDescriptor(parsing: payload)
        #expect(descriptor.temporalLayerID == 2 && descriptor.isLayerSync && descriptor.pictureID == 0x1235)
    }

    static let targets: [(UInt8, [UInt8])] = [(0, [0]), (1, [0, 1]), (2, [0, 1, 2]), (3, [0, 1, 2])]

    @Test(arguments: targets)
    func framesAboveTheTargetAreDroppedAndTheStreamStaysContinuous(target: UInt8, kept: [UInt8]) throws {
        var stream = TemporalTestStream()
        var (rewriter, outputs) = try started(&stream, target: target)
        for _ in 0..<40 { outputs += try rewriter.forward(stream.nextFrame(), at: ms(10)) }
        #expect(Set(outputs.map(\.input.temporalLayer)) == Set(kept))
        // Every packet of every frame of a kept layer went out (41 frames, two packets each).
        let frames = [UInt8: Int](uniqueKeysWithValues: [(0, 11), (1, 10), (2, 20)])
        #expect(outputs.count == 2 * kept.reduce(0) { $0 + frames[$1]! })
        expectContinuous(outputs)
        // The key frame went out with the first values of the slot and its publisher's TL0PICIDX.
        #expect(outputs.first?.sequenceNumber == 20_000)
        #expect(rewriter.temporalFramesDropped == UInt64(41 - outputs.count / 2))
        // TID, Y and the other descriptor fields are the publisher's.
        for output in outputs {
            #expect(output.temporalLayer == output.input.temporalLayer)
            #expect(output.parsed.vp8?.isLayerSync == output.input.layerSync)
        }
    }

    /// Going up waits for a sync frame of the next layer (Y set), one layer at a time: layer 1
    /// comes back at its first sync frame, layer 2 at its first sync frame after that; frames
    /// of a layer not yet synced are dropped even when the target allows them.
    @Test func goingUpWaitsForALayerSyncFrameOneLayerAtATime() throws {
        var stream = TemporalTestStream()
        var (rewriter, outputs) = try started(&stream, target: 0)
        outputs += try rewriter.forward(stream.nextFrame(), at: ms(10))  // TID 2, dropped
        rewriter.targetTemporalLayer = 2
        #expect(rewriter.currentTemporalLayer == 0)
        // TID 1 without Y, then a base frame and a TID 2 with Y (but layer 1 is not synced yet).
        let unsynced = try rewriter.forward(stream.nextFrame(sync: false), at: ms(20))
        #expect(unsynced.isEmpty)
        _ = try rewriter.forward(stream.nextFrame(), at: ms(30))  // TID 2, no Y
        outputs += try rewriter.forward(stream.nextFrame(), at: ms(40))  // TID 0
        let layer2Early = try rewriter.forward(stream.nextFrame(), at: ms(50))  // TID 2, Y
        #expect(layer2Early.isEmpty && rewriter.currentTemporalLayer == 0)
        let layer1 = try rewriter.forward(stream.nextFrame(), at: ms(60))  // TID 1, Y
        #expect(layer1.count == 2 && rewriter.currentTemporalLayer == 1)
        outputs += layer1
        let unsynced2 = try rewriter.forward(stream.nextFrame(), at: ms(70))  // TID 2, no Y
        #expect(unsynced2.isEmpty)
        outputs += try rewriter.forward(stream.nextFrame(), at: ms(80))  // TID 0
        let layer2 = try rewriter.forward(stream.nextFrame(), at: ms(90))  // TID 2, Y
        #expect(layer2.count == 2 && rewriter.currentTemporalLayer == 2)
        outputs += layer2
        var synced: [SlotOutput] = []
        for _ in 0..<8 { synced += try rewriter.forward(stream.nextFrame(), at: ms(100)) }
        #expect(synced.count == 16, "every frame forwarded once synced")
        expectContinuous(outputs + synced)
    }

    /// A key frame restarts every layer: the target applies from it at once.
    @Test func aKeyFrameTakesEveryLayerUpToTheTarget() throws {
        var stream = TemporalTestStream()
        var (rewriter, outputs) = try started(&stream, target: 0)
        for _ in 0..<3 { outputs += try rewriter.forward(stream.nextFrame(), at: ms(10)) }
        rewriter.targetTemporalLayer = 2
        outputs += try rewriter.forward(stream.nextFrame(keyFrame: true), at: ms(20))
        #expect(rewriter.currentTemporalLayer == 2)
        let next = try rewriter.forward(stream.nextFrame(sync: false), at: ms(30))  // TID 2 without Y
        #expect(next.count == 2)
        outputs += next
        expectContinuous(outputs)
    }

    /// Going down takes effect at the next frame: a frame already started is finished.
    @Test func goingDownFinishesTheFrameInFlight() throws {
        var stream = TemporalTestStream()
        var (rewriter, outputs) = try started(&stream, target: 2)
        let layer2 = stream.nextFrame()
        outputs += try rewriter.forward([layer2[0]], at: ms(10))
        rewriter.targetTemporalLayer = 0
        outputs += try rewriter.forward([layer2[1]], at: ms(11))
        #expect(outputs.count == 4, "the rest of the frame in flight goes out")
        let layer1 = try rewriter.forward(stream.nextFrame(), at: ms(20))
        #expect(layer1.isEmpty && rewriter.currentTemporalLayer == 0)
        let layer2Next = try rewriter.forward(stream.nextFrame(), at: ms(30))
        #expect(layer2Next.isEmpty)
        outputs += try rewriter.forward(stream.nextFrame(), at: ms(40))  // TID 0
        #expect(outputs.count == 6)
        expectContinuous(outputs)
    }
}
