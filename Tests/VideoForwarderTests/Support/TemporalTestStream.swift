import ChorusCore
import RTP
import Testing
import VideoForwarder

/// A VP8 publisher with three temporal layers as libwebrtc sends them (RFC 7741 §4.2 payload
/// descriptors with I, L and T: 15-bit picture ID, TL0PICIDX, TID and Y): TIDs repeat 0, 2, 1,
/// 2; the first layer 2 and layer 1 frames after each base frame carry Y (they reference the
/// base layer only); every frame is `packetsPerFrame` packets, the first with S set, the last
/// with the marker. Counters start where the test says, so wrap-arounds can be placed.
struct TemporalTestStream {
    /// One packet sent, with the values written into it.
    struct Packet {
        let bytes: [UInt8]
        let sequenceNumber: UInt16
        let timestamp: UInt32
        let pictureID: UInt16
        let tl0: UInt8
        let temporalLayer: UInt8
        let layerSync: Bool
    }

    static let pattern: [(tid: UInt8, sync: Bool)] = [(0, false), (2, true), (1, true), (2, false)]

    var ssrc: UInt32 = 0xA
    var sequenceNumber: UInt16 = 1_000
    var timestamp: UInt32 = 90_000
    var pictureID: UInt16 = 100
    var longPictureID = true
    var tl0: UInt8 = 7
    var packetsPerFrame = 2
    /// The position in `pattern` of the next frame.
    var position = 0

    /// The next frame's packets; a key frame restarts the pattern at the base layer.
    mutating func nextFrame(keyFrame: Bool = false, sync: Bool? = nil) -> [Packet] {
        if keyFrame { position = 0 }
        let (tid, patternSync) = Self.pattern[position % Self.pattern.count]
        if tid == 0, position > 0 || keyFrame { tl0 &+= 1 }
        var packets: [Packet] = []
        for index in 0..<packetsPerFrame {
            let kind: TestVP8Payload.Kind = index > 0 ? .continuation : keyFrame ? .keyframe : .interframe
            let payload = TestVP8Payload(
                kind: kind, pictureID: pictureID, longPictureID: longPictureID, tl0: tl0, temporalLayer: tid,
                layerSync: sync ?? (keyFrame || patternSync), keyIndex: 3,
                body: [UInt8(truncatingIfNeeded: sequenceNumber), 0x5A])
            let bytes = TestRTPPacket(
                marker: index == packetsPerFrame - 1, sequenceNumber: sequenceNumber, timestamp: timestamp, ssrc: ssrc,
                payload: payload.bytes
            ).bytes
            packets.append(Packet(bytes: bytes, sequenceNumber: sequenceNumber, timestamp: timestamp,
                                  pictureID: pictureID, tl0: tl0, temporalLayer: tid,
                                  layerSync: sync ?? (keyFrame || patternSync)))
            sequenceNumber &+= 1
        }
        position += 1
        timestamp &+= 3_000
        pictureID = (pictureID &+ 1) & (longPictureID ? 0x7FFF : 0x7F)
        return packets
    }
}

/// What a slot wrote for one publisher packet, parsed back.
struct SlotOutput {
    let input: TemporalTestStream.Packet
    let parsed: ParsedPacket

    var sequenceNumber: UInt16 { parsed.header.sequenceNumber }
    var pictureID: UInt16? { parsed.vp8?.pictureID }
    var tl0: UInt8? { parsed.vp8?.tl0PictureIndex }
    var temporalLayer: UInt8? { parsed.vp8?.temporalLayerID }
}

extension SlotStreamRewriter {
    /// Forwards `packets` in order; the outputs of the ones forwarded.
    mutating func forward(_ packets: [TemporalTestStream.Packet], at now: MediaTime) throws -> [SlotOutput] {
        try packets.compactMap { packet in
            try forward(packet.bytes, at: now).map { SlotOutput(input: packet, parsed: try ParsedPacket($0)) }
        }
    }
}

/// Checks that consecutive outputs form one continuous stream: sequence numbers +1 per packet,
/// picture IDs +1 per frame (0 within a frame; modulo 2^15, or 2^7 for short ones), TL0PICIDX
/// +1 at each base layer frame.
func expectContinuous(_ outputs: [SlotOutput], long: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) {
    for (previous, next) in zip(outputs, outputs.dropFirst()) {
        #expect(next.sequenceNumber == previous.sequenceNumber &+ 1,
                "sequence \(previous.sequenceNumber) → \(next.sequenceNumber)", sourceLocation: sourceLocation)
        let sameFrame = next.input.timestamp == previous.input.timestamp
        let step: UInt16 = sameFrame ? 0 : 1
        let mask: UInt16 = long ? 0x7FFF : 0x7F
        if let before = previous.pictureID, let after = next.pictureID {
            #expect(after == (before &+ step) & mask, "picture ID \(before) → \(after)", sourceLocation: sourceLocation)
        }
        let tl0Step: UInt8 = !sameFrame && next.temporalLayer == 0 ? 1 : 0
        if let before = previous.tl0, let after = next.tl0 {
            #expect(after == before &+ tl0Step, "TL0PICIDX \(before) → \(after)", sourceLocation: sourceLocation)
        }
    }
}
