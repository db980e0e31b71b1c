import ChorusCore
import RTCP
import RTP

/// What both ends of a connection do alike when they report on RTP they receive (RFC 3550
/// §6.4): the report blocks of the streams heard, the randomized report interval, and the
/// transport-wide sequence number added to a packet on its way out. Shared by `PeerTransport`
/// (the server's side) and `ClientTransport` (a client's), so that the two write the same bytes.
enum RTCPReporting {
    /// Report interval: RFC 3550 §6.2's reduced minimum for a high-bandwidth session is below
    /// 1 s; WebRTC stacks send about once a second. Randomized ×[0.5, 1.5] (§6.3.5).
    static let intervalNanoseconds: UInt64 = 1_000_000_000

    /// The longest SRTP tag (AEAD_AES_128_GCM's 16 bytes; HMAC-SHA1-80's is 10): room left in a
    /// stamped copy so that protecting it needs no second buffer.
    static let srtpTagCapacity = 16

    /// 0.5–1.5 × the interval, from a small xorshift generator whose state the caller keeps
    /// (seeded from its SSRC, so that runs repeat).
    static func randomizedInterval(_ state: inout UInt64) -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return intervalNanoseconds / 2 + state % intervalNanoseconds
    }

    /// Report blocks for the received streams (at most 31, the RC field's limit), lowest SSRC
    /// first; each block advances its stream's "prior" counters (RFC 3550 A.3).
    static func reportBlocks(_ streams: inout [SSRC: ReceptionStatistics], at now: MediaTime) -> [ReportBlock] {
        var blocks: [ReportBlock] = []
        for ssrc in streams.keys.sorted().prefix(31) {
            if let block = streams[ssrc]?.reportBlock(at: now) { blocks.append(block) }
        }
        return blocks
    }

    /// `packet` with a transport-wide sequence number (draft-holmer-rmcat-transport-wide-cc-
    /// extensions-01) added in extension `id`, in one allocation with room for the SRTP tag the
    /// protect appends; nil when it cannot be added (see `RTPHeaderRewriter.addingExtension`).
    static func adding(transportSequence sequence: UInt16, id: UInt8, to packet: [UInt8], header: RTPHeader) -> [UInt8]? {
        withUnsafeBytes(of: sequence.bigEndian) { data in
            RTPHeaderRewriter.addingExtension(id: id, data: data, to: packet, header: header,
                                              extraCapacity: srtpTagCapacity)
        }
    }

    /// RTCP BYE packets (RFC 3550 §6.6) for `sources`, 31 to a packet, appended to a compound
    /// that already leads with a report and SDES (§6.1).
    static func appendGoodbyes(for sources: [SSRC], to compound: inout [UInt8]) {
        for chunk in stride(from: 0, to: sources.count, by: Goodbye.maximumSources) {
            let part = sources[chunk..<min(chunk + Goodbye.maximumSources, sources.count)]
            try? Goodbye(sources: RTCPItemList(part))?.serialize(into: &compound)
        }
    }
}
