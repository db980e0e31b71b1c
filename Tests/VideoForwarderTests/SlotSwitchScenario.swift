import ChorusCore
import RTP
import Testing
import VideoForwarder

/// The table the slot stream tests drive: one slot toward one subscriber showing publisher A,
/// switching to publisher B on B's key frame, going empty, then showing A again.
///
/// Every counter crosses its wrap somewhere: A's sequence numbers 65535→0 and timestamps 2^32
/// with a 15-bit picture ID 0x7FFF→0 and TL0PICIDX 255→0; the slot's own sequence numbers and
/// timestamps wrap on different packets; B's counters wrap again right after the switch, its
/// KEYIDX 31→0, and the slot's KEYIDX wraps at the switch itself. The expected values are
/// written out by hand from the rule "a publisher's stream is shifted by constant offsets; at a
/// switch the new key frame follows the last packet written with sequence number, picture ID,
/// TL0PICIDX and KEYIDX +1 and the timestamp advanced by the wall-clock gap at 90 kHz".
enum SlotSwitchScenario {
    static let slotSSRC = SSRC(0x5107_5107)
    static let slotPayloadType = PayloadType(100)!
    static let initialSequenceNumber: UInt16 = 65_534
    static let initialTimestamp: UInt32 = 0xFFFF_FF00
    static let a: UInt32 = 0xAAAA_0001
    static let b: UInt32 = 0xBBBB_0002

    /// The slot packet a step must produce.
    struct Expected: Equatable {
        var sequenceNumber: UInt16
        var timestamp: UInt32
        var pictureID: UInt16
        var tl0: UInt8
        var keyIndex: UInt8
    }

    enum Action {
        case forward
        /// `switchSource` to this packet's publisher first (the packet starts a key frame).
        case switchThenForward
        /// `clearSource` first.
        case clearThenForward
    }

    struct Step {
        var name: String
        var action: Action
        /// Wall clock, milliseconds.
        var at: UInt64
        var input: TestRTPPacket
        /// nil: not forwarded.
        var expected: Expected?
    }

    static func rewriter() -> SlotStreamRewriter {
        SlotStreamRewriter(
            ssrc: slotSSRC, payloadType: slotPayloadType, initialSequenceNumber: initialSequenceNumber,
            initialTimestamp: initialTimestamp)
    }

    /// A publisher packet; header extension on all, padding on odd sequence numbers, and a
    /// body that names the packet so a mixed-up payload shows.
    static func packet(
        _ publisher: UInt32, seq: UInt16, ts: UInt32, _ kind: TestVP8Payload.Kind, pictureID: UInt16, tl0: UInt8,
        keyIndex: UInt8, marker: Bool, csrcs: [UInt32] = []
    ) -> TestRTPPacket {
        let vp8 = TestVP8Payload(
            kind: kind, pictureID: pictureID, tl0: tl0, layerSync: kind == .keyframe, keyIndex: keyIndex,
            body: [UInt8(seq >> 8), UInt8(seq & 0xFF), 0x5A, UInt8(publisher & 0xFF), 0xA5])
        return TestRTPPacket(
            marker: marker, payloadType: publisher == a ? 96 : 98, sequenceNumber: seq, timestamp: ts,
            ssrc: publisher, csrcs: csrcs, extensionElement: (id: 4, data: [0x12, 0x34, 0x56]),
            padding: seq % 2 == 1 ? 6 : 0, payload: vp8.bytes)
    }

    static func expect(_ seq: UInt16, _ ts: UInt32, pictureID: UInt16, tl0: UInt8, keyIndex: UInt8) -> Expected {
        Expected(sequenceNumber: seq, timestamp: ts, pictureID: pictureID, tl0: tl0, keyIndex: keyIndex)
    }

    static let steps: [Step] = [
        // A: the slot's first source; offsets seq +1, ts +0x2611, VP8 fields +0.
        Step(name: "A key frame, first switch", action: .switchThenForward, at: 0,
             input: packet(a, seq: 65_533, ts: 0xFFFF_D8F0, .keyframe, pictureID: 0x7FFD, tl0: 254, keyIndex: 30,
                           marker: false, csrcs: [0xDEAD_BEEF]),
             expected: expect(65_534, 0xFFFF_FF01, pictureID: 0x7FFD, tl0: 254, keyIndex: 30)),
        Step(name: "A key frame, second packet", action: .forward, at: 1,
             input: packet(a, seq: 65_534, ts: 0xFFFF_D8F0, .continuation, pictureID: 0x7FFD, tl0: 254, keyIndex: 30,
                           marker: true),
             expected: expect(65_535, 0xFFFF_FF01, pictureID: 0x7FFD, tl0: 254, keyIndex: 30)),
        Step(name: "A delta, slot seq and ts wrap", action: .forward, at: 33,
             input: packet(a, seq: 65_535, ts: 0xFFFF_E4A8, .interframe, pictureID: 0x7FFE, tl0: 255, keyIndex: 30,
                           marker: true),
             expected: expect(0, 0x0000_0AB9, pictureID: 0x7FFE, tl0: 255, keyIndex: 30)),
        Step(name: "A delta, A seq and TL0 wrap", action: .forward, at: 66,
             input: packet(a, seq: 0, ts: 0xFFFF_F060, .interframe, pictureID: 0x7FFF, tl0: 0, keyIndex: 30,
                           marker: true),
             expected: expect(1, 0x0000_1671, pictureID: 0x7FFF, tl0: 0, keyIndex: 30)),
        Step(name: "A key frame, picture ID wraps", action: .forward, at: 100,
             input: packet(a, seq: 1, ts: 0xFFFF_FC18, .keyframe, pictureID: 0, tl0: 1, keyIndex: 31, marker: false),
             expected: expect(2, 0x0000_2229, pictureID: 0, tl0: 1, keyIndex: 31)),
        Step(name: "A delta, A ts wraps (seq 2 still missing)", action: .forward, at: 133,
             input: packet(a, seq: 3, ts: 0x0000_07D0, .interframe, pictureID: 1, tl0: 2, keyIndex: 31, marker: true),
             expected: expect(4, 0x0000_2DE1, pictureID: 1, tl0: 2, keyIndex: 31)),
        Step(name: "A seq 2 reordered, same offsets", action: .forward, at: 140,
             input: packet(a, seq: 2, ts: 0xFFFF_FC18, .continuation, pictureID: 0, tl0: 1, keyIndex: 31, marker: true),
             expected: expect(3, 0x0000_2229, pictureID: 0, tl0: 1, keyIndex: 31)),
        Step(name: "A delta, last before the switch", action: .forward, at: 166,
             input: packet(a, seq: 4, ts: 0x0000_1388, .interframe, pictureID: 2, tl0: 3, keyIndex: 31, marker: true),
             expected: expect(5, 0x0000_3999, pictureID: 2, tl0: 3, keyIndex: 31)),
        // B before the switch: not this slot's source.
        Step(name: "B while the slot shows A", action: .forward, at: 216,
             input: packet(b, seq: 65_534, ts: 0xFFFF_F048, .interframe, pictureID: 0x7FFD, tl0: 254, keyIndex: 30,
                           marker: true),
             expected: nil),
        // Switch 50 ms after A's last packet: ts +4500; seq, picture ID, TL0 and KEYIDX +1
        // (KEYIDX 31 → 0). B's offsets: seq +7, ts +0x4F2D, picture ID +5, TL0 +5, KEYIDX +1.
        Step(name: "B key frame, switch", action: .switchThenForward, at: 216,
             input: packet(b, seq: 65_535, ts: 0xFFFF_FC00, .keyframe, pictureID: 0x7FFE, tl0: 255, keyIndex: 31,
                           marker: false),
             expected: expect(6, 0x0000_4B2D, pictureID: 3, tl0: 4, keyIndex: 0)),
        Step(name: "A after the switch", action: .forward, at: 217,
             input: packet(a, seq: 5, ts: 0x0000_1F40, .interframe, pictureID: 3, tl0: 4, keyIndex: 31, marker: true),
             expected: nil),
        Step(name: "B older than its key frame", action: .forward, at: 218,
             input: packet(b, seq: 65_534, ts: 0xFFFF_F048, .interframe, pictureID: 0x7FFD, tl0: 254, keyIndex: 30,
                           marker: true),
             expected: nil),
        Step(name: "B key frame, second packet, B seq wraps", action: .forward, at: 220,
             input: packet(b, seq: 0, ts: 0xFFFF_FC00, .continuation, pictureID: 0x7FFE, tl0: 255, keyIndex: 31,
                           marker: true),
             expected: expect(7, 0x0000_4B2D, pictureID: 3, tl0: 4, keyIndex: 0)),
        Step(name: "B delta, B ts and TL0 wrap", action: .forward, at: 250,
             input: packet(b, seq: 1, ts: 0x0000_07B8, .interframe, pictureID: 0x7FFF, tl0: 0, keyIndex: 31,
                           marker: true),
             expected: expect(8, 0x0000_56E5, pictureID: 4, tl0: 5, keyIndex: 0)),
        Step(name: "B key frame, B picture ID and KEYIDX wrap", action: .forward, at: 283,
             input: packet(b, seq: 2, ts: 0x0000_1370, .keyframe, pictureID: 0, tl0: 1, keyIndex: 0, marker: true),
             expected: expect(9, 0x0000_629D, pictureID: 5, tl0: 6, keyIndex: 1)),
        Step(name: "A still not shown", action: .forward, at: 300,
             input: packet(a, seq: 6, ts: 0x0000_2AF8, .interframe, pictureID: 4, tl0: 5, keyIndex: 31, marker: true),
             expected: nil),
        Step(name: "B after clearSource", action: .clearThenForward, at: 310,
             input: packet(b, seq: 3, ts: 0x0000_1F28, .interframe, pictureID: 1, tl0: 2, keyIndex: 0, marker: true),
             expected: nil),
        // A again, 117 ms after B's last packet: ts +10530 (0x2922). A's new offsets: seq +0,
        // ts +0x2DFF, picture ID −2, TL0 +63, KEYIDX +25.
        Step(name: "A key frame, switch back", action: .switchThenForward, at: 400,
             input: packet(a, seq: 10, ts: 0x0000_5DC0, .keyframe, pictureID: 8, tl0: 200, keyIndex: 9, marker: true),
             expected: expect(10, 0x0000_8BBF, pictureID: 6, tl0: 7, keyIndex: 2)),
        Step(name: "A delta after switching back", action: .forward, at: 433,
             input: packet(a, seq: 11, ts: 0x0000_6978, .interframe, pictureID: 9, tl0: 201, keyIndex: 9, marker: true),
             expected: expect(11, 0x0000_9777, pictureID: 7, tl0: 8, keyIndex: 2)),
    ]

    /// What one run of the table produced.
    struct Run {
        var rewriter: SlotStreamRewriter
        /// Each step's output (nil when dropped), in step order.
        var outputs: [[UInt8]?]
        /// Every publisher packet, by SSRC and sequence number: the room's packet caches.
        var cache: [UInt32: [UInt16: [UInt8]]]
    }

    static func run() throws -> Run {
        var rewriter = rewriter()
        var outputs: [[UInt8]?] = []
        var cache: [UInt32: [UInt16: [UInt8]]] = [:]
        for step in steps {
            let bytes = step.input.bytes
            cache[step.input.ssrc, default: [:]][step.input.sequenceNumber] = bytes
            switch step.action {
            case .forward: break
            case .switchThenForward: try rewriter.switchToPacket(bytes, at: ms(step.at))
            case .clearThenForward: rewriter.clearSource()
            }
            outputs.append(try rewriter.forward(bytes, at: ms(step.at)))
        }
        return Run(rewriter: rewriter, outputs: outputs, cache: cache)
    }
}
