import ChorusCore
import RTP

/// RFC 3711 §3.1 encrypts an SRTP packet's payload only: the RTP header and its extensions
/// travel in the clear, and the authentication tag follows the payload. A receiver that needs
/// nothing but the header (sequence number, timestamp, SSRC, marker, the transport-wide
/// sequence number) can take it without the transform. The load generator does, for listeners
/// that only count loss and timing: decrypting every payload made its receive path cost about
/// as much as the server's send path.
extension ClientTransport {
    /// Takes an SRTP packet on its clear header: counted, recorded for receiver reports and
    /// transport-cc like any packet, but neither authenticated nor decrypted — so the caller
    /// must still send a share of its packets through `receive` (which authenticates them,
    /// and keeps the replay window and rollover counter moving). nil, with nothing counted,
    /// for anything that is not an RTP packet of a connected transport from the server, or that
    /// carries padding (its count byte is encrypted): `receive` is the way for those.
    public func receiveClearHeader(_ datagram: [UInt8], from source: TransportAddress, now: MediaTime) -> RTPHeader? {
        guard srtp != nil, !isClosed, source == configuration.remote, PacketClass(datagram) == .rtp,
              let rtp = try? RTPPacket(parsing: datagram), !rtp.header.hasPadding
        else { return nil }
        recordArrival(rtp, size: datagram.count, now: now)
        return rtp.header
    }
}
