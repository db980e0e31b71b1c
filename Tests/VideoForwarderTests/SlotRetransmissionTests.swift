import ChorusCore
import RTP
import Testing
import VideoForwarder

/// Proves a NACKed slot packet is rebuilt byte for byte from the publisher packet and the
/// mapping in force when it was first sent, for the last 1024 slot packets.
@Suite("SlotStreamRewriter: answering a subscriber's NACK from the history")
struct SlotRetransmissionTests {
    private func packet(_ ssrc: UInt32, seq: UInt16, pictureID: UInt16, key: Bool = false) -> [UInt8] {
        let payload = TestVP8Payload(
            kind: key ? .keyframe : .interframe, pictureID: pictureID, tl0: UInt8(truncatingIfNeeded: pictureID),
            keyIndex: 1, body: [UInt8(seq & 0xFF), 0x77])
        return TestRTPPacket(
            marker: true, sequenceNumber: seq, timestamp: UInt32(seq) &* 3_000, ssrc: ssrc,
            extensionElement: (id: 2, data: [1, 2, 3]), payload: payload.bytes
        ).bytes
    }

    /// For every packet the switch table forwarded, `mapping(forSlotSequence:)` names the
    /// publisher and its sequence number, and `rewriteAgain` on the cached publisher packet
    /// reproduces the original slot packet byte for byte, including A's packets sent before
    /// the switches, whose mapping is no longer the current one.
    @Test func retransmissionsReproduceTheOriginalBytes() throws {
        let run = try SlotSwitchScenario.run()
        var checked = 0
        for (step, output) in zip(SlotSwitchScenario.steps, run.outputs) {
            guard let original = output else { continue }
            let slotSequence = try RTPHeader(parsing: original).sequenceNumber
            let found = try #require(run.rewriter.mapping(forSlotSequence: slotSequence), "\(step.name)")
            #expect(found.mapping.source == SSRC(step.input.ssrc), "\(step.name)")
            #expect(found.sourceSequence == step.input.sequenceNumber, "\(step.name)")
            let again = try run.rewriter.retransmission(of: slotSequence, from: run.cache)
            #expect(again == original, "\(step.name)")
            checked += 1
        }
        #expect(checked == 14)
        // Slot sequence numbers never written (before the stream started) have no mapping.
        #expect(run.rewriter.mapping(forSlotSequence: 12) == nil)
        #expect(run.rewriter.mapping(forSlotSequence: 65_533) == nil)
    }

    /// A packet the publisher lost leaves a hole in the slot's sequence numbers, which has no
    /// mapping; when the publisher's retransmission arrives it fills exactly that hole.
    @Test func publisherLossLeavesAHoleThatTheRepairFills() throws {
        var slot = SlotStreamRewriter(
            ssrc: SSRC(0x51), payloadType: PayloadType(100)!, initialSequenceNumber: 65_535, initialTimestamp: 0)
        let key = packet(0xA, seq: 10, pictureID: 1, key: true)
        try slot.switchToPacket(key, at: ms(0))
        var cache: [UInt32: [UInt16: [UInt8]]] = [0xA: [10: key]]
        var written: [UInt16: [UInt8]] = [:]
        for (seq, at) in [(UInt16(10), UInt64(0)), (11, 33), (13, 99)] {
            let bytes = seq == 10 ? key : packet(0xA, seq: seq, pictureID: seq - 9)
            cache[0xA]![seq] = bytes
            let out = try #require(try slot.forward(bytes, at: ms(at)))
            written[try RTPHeader(parsing: out).sequenceNumber] = out
        }
        #expect(written.keys.sorted() == [0, 2, 65_535])
        #expect(slot.mapping(forSlotSequence: 1) == nil)
        let repaired = packet(0xA, seq: 12, pictureID: 3)
        cache[0xA]![12] = repaired
        let out = try #require(try slot.forward(repaired, at: ms(150)))
        #expect(try RTPHeader(parsing: out).sequenceNumber == 1)
        #expect(slot.mapping(forSlotSequence: 1)?.sourceSequence == 12)
        #expect(try slot.retransmission(of: 1, from: cache) == out)
    }

    /// The history holds the last 1024 slot packets: a sequence number is answerable until
    /// 1024 newer packets were written, then `mapping(forSlotSequence:)` returns nil.
    @Test func historyForgetsAfter1024NewerPackets() throws {
        var slot = SlotStreamRewriter(
            ssrc: SSRC(0x51), payloadType: PayloadType(100)!, initialSequenceNumber: 65_000, initialTimestamp: 0)
        var cache: [UInt32: [UInt16: [UInt8]]] = [:]
        var originals: [UInt16: [UInt8]] = [:]
        func send(_ seq: UInt16) throws {
            let bytes = packet(0xA, seq: seq, pictureID: seq & 0x7FFF, key: seq == 0)
            if seq == 0 { try slot.switchToPacket(bytes, at: ms(0)) }
            cache[0xA, default: [:]][seq] = bytes
            let out = try #require(try slot.forward(bytes, at: ms(UInt64(seq))))
            originals[try RTPHeader(parsing: out).sequenceNumber] = out
        }
        // Slot sequence numbers 65000 … 65535, 0 … 487: 1024 packets across the wrap.
        for seq in UInt16(0)..<1_024 { try send(seq) }
        #expect(slot.mapping(forSlotSequence: 65_000)?.sourceSequence == 0)
        #expect(try slot.retransmission(of: 65_000, from: cache) == originals[65_000])
        #expect(try slot.retransmission(of: 487, from: cache) == originals[487])
        #expect(slot.mapping(forSlotSequence: 488) == nil)

        try send(1_024)  // slot 488 overwrites 65000
        #expect(slot.mapping(forSlotSequence: 65_000) == nil)
        #expect(slot.mapping(forSlotSequence: 65_001)?.sourceSequence == 1)
        #expect(try slot.retransmission(of: 488, from: cache) == originals[488])

        for seq in UInt16(1_025)..<2_048 { try send(seq) }
        #expect(slot.mapping(forSlotSequence: 65_535) == nil)
        #expect(slot.mapping(forSlotSequence: 487) == nil)
        #expect(slot.mapping(forSlotSequence: 488)?.sourceSequence == 1_024)
        #expect(try slot.retransmission(of: 1_511, from: cache) == originals[1_511])
    }
}
