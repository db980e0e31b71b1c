import ChorusCore
import RTP
import Testing
import VideoForwarder

/// A publisher's RTP packet, serialized by hand (RFC 3550 §5.1) so the forwarder is fed real
/// wire bytes: V=2, marker, payload type, sequence number, timestamp, SSRC, optional CSRCs, an
/// optional one-byte (0xBEDE, RFC 8285) header extension element and optional padding.
struct TestRTPPacket {
    var marker = false
    var payloadType: UInt8 = 96
    var sequenceNumber: UInt16
    var timestamp: UInt32
    var ssrc: UInt32
    var csrcs: [UInt32] = []
    /// One RFC 8285 one-byte element (ID 1…14, 1…16 bytes of data).
    var extensionElement: (id: UInt8, data: [UInt8])?
    /// Padding bytes at the end, the count byte included; 0 for none.
    var padding = 0
    var payload: [UInt8]

    var bytes: [UInt8] {
        var out: [UInt8] = []
        out.append(0x80 | (padding > 0 ? 0x20 : 0) | (extensionElement != nil ? 0x10 : 0) | UInt8(csrcs.count))
        out.append((marker ? 0x80 : 0) | payloadType & 0x7F)
        out.append(contentsOf: Self.be16(sequenceNumber))
        out.append(contentsOf: Self.be32(timestamp))
        out.append(contentsOf: Self.be32(ssrc))
        for csrc in csrcs { out.append(contentsOf: Self.be32(csrc)) }
        if let element = extensionElement {
            var block: [UInt8] = [element.id << 4 | UInt8(element.data.count - 1)] + element.data
            while block.count % 4 != 0 { block.append(0) }  // zero padding between elements
            out.append(contentsOf: [0xBE, 0xDE] + Self.be16(UInt16(block.count / 4)))
            out.append(contentsOf: block)
        }
        out.append(contentsOf: payload)
        if padding > 0 {
            out.append(contentsOf: [UInt8](repeating: 0, count: padding - 1))
            out.append(UInt8(padding))
        }
        return out
    }

    static func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }

    static func be32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}

/// A VP8 RTP payload (RFC 7741 §4.2): the descriptor with X=1 and I, L, T, K all present
/// (picture ID 15-bit with M=1, or 7-bit), then the VP8 payload header's first byte, whose
/// bit 0 (P) is 0 for a key frame (RFC 6386 §9.1), then some opaque bytes.
struct TestVP8Payload {
    enum Kind {
        /// First packet of a key frame: S=1, PID=0, P=0.
        case keyframe
        /// First packet of an inter frame: S=1, PID=0, P=1.
        case interframe
        /// A later packet of a frame: S=0.
        case continuation
    }

    var kind: Kind
    var pictureID: UInt16
    var longPictureID = true
    var tl0: UInt8
    var temporalLayer: UInt8 = 0
    var layerSync = false
    var keyIndex: UInt8
    var body: [UInt8] = [0xC0, 0xFF, 0xEE]

    var bytes: [UInt8] {
        var out: [UInt8] = [0x80 | (kind == .continuation ? 0 : 0x10), 0xF0]
        if longPictureID {
            out.append(contentsOf: [0x80 | UInt8(pictureID >> 8 & 0x7F), UInt8(pictureID & 0xFF)])
        } else {
            out.append(UInt8(pictureID & 0x7F))
        }
        out.append(tl0)
        out.append(temporalLayer << 6 | (layerSync ? 0x20 : 0) | keyIndex & 0x1F)
        // First byte of the VP8 payload header (show_frame set); partition data on a continuation.
        out.append(kind == .keyframe ? 0x10 : 0x11)
        out.append(contentsOf: body)
        return out
    }
}

/// A packet parsed back with the RTP target's own parsers.
struct ParsedPacket {
    let bytes: [UInt8]
    let header: RTPHeader
    let csrcs: [SSRC]
    let payload: ArraySlice<UInt8>
    let vp8: VP8PayloadDescriptor?

    init(_ bytes: [UInt8], vp8: Bool = true) throws {
        self.bytes = bytes
        let packet = try RTPPacket(parsing: bytes)
        header = packet.header
        csrcs = Array(packet.csrcs)
        payload = packet.payload
        self.vp8 = vp8 ? try VP8PayloadDescriptor(parsing: packet.payload) : nil
    }

    /// The payload after the VP8 descriptor (the whole payload without one).
    var afterDescriptor: [UInt8] { Array(payload.dropFirst(vp8?.length ?? 0)) }
}

func ms(_ value: UInt64) -> MediaTime { .milliseconds(value) }

extension SlotStreamRewriter {
    /// Parses `packet` and switches to its SSRC there (the packet should start a key frame).
    mutating func switchToPacket(_ packet: [UInt8], at now: MediaTime, vp8: Bool = true) throws {
        let parsed = try ParsedPacket(packet, vp8: vp8)
        switchSource(to: parsed.header.ssrc, at: parsed.header, vp8: parsed.vp8, now: now)
    }

    /// Parses `packet` and rewrites it; the written bytes, or nil when it is not forwarded
    /// (then `out` must be left as it was).
    mutating func forward(_ packet: [UInt8], at now: MediaTime, vp8: Bool = true) throws -> [UInt8]? {
        let parsed = try ParsedPacket(packet, vp8: vp8)
        let sentinel: [UInt8] = [0x5E, 0x47]
        var out = sentinel
        guard let sequence = rewrite(packet, header: parsed.header, vp8: parsed.vp8, now: now, into: &out) else {
            #expect(out == sentinel, "a dropped packet must leave the output buffer alone")
            return nil
        }
        #expect(try RTPHeader(parsing: out).sequenceNumber == sequence, "returned sequence number")
        return out
    }

    /// Answers a NACK for `slotSequence` from the publisher packets in `cache` (keyed by
    /// publisher SSRC and sequence number), as the room will.
    func retransmission(of slotSequence: UInt16, from cache: [UInt32: [UInt16: [UInt8]]], vp8: Bool = true) throws
        -> [UInt8]?
    {
        guard let found = mapping(forSlotSequence: slotSequence) else { return nil }
        let original = try #require(cache[found.mapping.source.rawValue]?[found.sourceSequence])
        let parsed = try ParsedPacket(original, vp8: vp8)
        var out: [UInt8] = []
        rewriteAgain(original, header: parsed.header, vp8: parsed.vp8, mapping: found.mapping, into: &out)
        return out
    }
}
