import ChorusCore

/// An RTCP goodbye, BYE (RFC 3550 §6.6): the listed sources are leaving, optionally with a
/// reason.
///
/// ```
/// |V=2|P|    SC   |   PT=BYE=203  |             length            |
/// |                           SSRC/CSRC                           |  × SC
/// |     length    |               reason for leaving ...          |  optional
/// ```
///
/// A client's BYE tells the room that a stream ended before ICE consent notices; Chorus sends
/// one for each stream it stops forwarding to a participant.
public struct Goodbye: Sendable, Equatable {
    public static let maximumSources = 31

    public var sources: RTCPItemList<SSRC>
    /// The reason text, nil when absent.
    public var reason: ArraySlice<UInt8>?

    /// nil when the reason exceeds 255 bytes.
    public init?(sources: RTCPItemList<SSRC>, reason: String? = nil) {
        if let reason, reason.utf8.count > 255 { return nil }
        self.sources = sources
        self.reason = reason.map { Array($0.utf8)[...] }
    }

    public var reasonString: String? { reason.flatMap { String(validating: $0, as: UTF8.self) } }

    /// `packet` holds exactly one BYE.
    public init(parsing packet: ArraySlice<UInt8>) throws(RTCPParseError) {
        let frame = try RTCPPacketFrame(packet, type: .goodbye)
        guard let sources = RTCPItemList<SSRC>.parse(frame.body, count: Int(frame.header.count)) else {
            throw .malformedBody
        }
        self.sources = sources
        let rest = frame.body.bytes(at: sources.bytes.count, count: frame.body.count - sources.bytes.count)
        if rest.isEmpty {
            reason = nil
        } else {
            let length = Int(rest.byte(at: 0))
            guard 1 + length <= rest.count else { throw .malformedBody }
            reason = rest.bytes(at: 1, count: length)
        }
    }

    public init(parsing packet: [UInt8]) throws(RTCPParseError) {
        try self.init(parsing: packet[...])
    }

    public func serialize(into out: inout [UInt8]) throws(RTCPSerializationError) {
        guard sources.count <= Self.maximumSources else {
            throw .tooManyItems(count: sources.count, limit: Self.maximumSources)
        }
        let reasonLength = reason.map { 1 + $0.count } ?? 0
        guard (reason?.count ?? 0) <= 255 else { throw .textTooLong(reason?.count ?? 0) }
        let padded = (reasonLength + 3) / 4 * 4
        let bodyLength = sources.bytes.count + padded
        try out.appendRTCPPacket(type: .goodbye, count: UInt8(sources.count), bodyLength: bodyLength) { writer in
            writer.put(contentsOf: sources.bytes)
            if let reason {
                writer.put(UInt8(reason.count))
                writer.put(contentsOf: reason)
                writer.putZeros(padded - reasonLength)
            }
        }
    }
}
