import ChorusCore

/// An RTCP packet type (RFC 3550 §12.1, RFC 4585 §6.1), kept open so that unknown types pass
/// through as values instead of failing the compound.
public struct RTCPPacketType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8

    public init(rawValue: UInt8) {
        self.rawValue = rawValue
    }

    public static let senderReport = RTCPPacketType(rawValue: 200)
    public static let receiverReport = RTCPPacketType(rawValue: 201)
    public static let sourceDescription = RTCPPacketType(rawValue: 202)
    public static let goodbye = RTCPPacketType(rawValue: 203)
    public static let applicationDefined = RTCPPacketType(rawValue: 204)
    /// RTPFB: transport-layer feedback (NACK, transport-cc).
    public static let transportLayerFeedback = RTCPPacketType(rawValue: 205)
    /// PSFB: payload-specific feedback (PLI, FIR, REMB).
    public static let payloadSpecificFeedback = RTCPPacketType(rawValue: 206)
    public static let extendedReport = RTCPPacketType(rawValue: 207)

    public var description: String { String(rawValue) }
}

/// The 4-byte header every RTCP packet starts with (RFC 3550 §6.4.1):
///
/// ```
/// |V=2|P|  count  |      PT       |            length             |
/// ```
///
/// `count` is the report count (SR, RR), source count (SDES, BYE) or feedback message type
/// (FMT, RFC 4585 §6.1); `length` is the packet size in 32-bit words minus one.
public struct RTCPHeader: Sendable, Equatable {
    public static let length = 4
    public static let version: UInt8 = 2

    public let hasPadding: Bool
    /// RC, SC or FMT: 0…31.
    public let count: UInt8
    public let packetType: RTCPPacketType
    /// The raw length field.
    public let lengthInWords: UInt16

    /// Size of the whole packet in bytes, header and padding included.
    public var packetLength: Int { (Int(lengthInWords) + 1) * 4 }

    /// Reads the header at the start of `bytes`; checks the version only.
    public init(parsing bytes: ArraySlice<UInt8>) throws(RTCPParseError) {
        guard bytes.count >= Self.length else { throw .truncated }
        let first = bytes.byte(at: 0)
        guard first >> 6 == Self.version else { throw .unsupportedVersion(first >> 6) }
        hasPadding = first & 0x20 != 0
        count = first & 0x1F
        packetType = RTCPPacketType(rawValue: bytes.byte(at: 1))
        lengthInWords = bytes.uint16(at: 2)
    }
}

/// One RTCP packet split into header and body, with its padding checked and removed. Every
/// message parser starts here, so each one gets the same length and padding rules.
struct RTCPPacketFrame {
    let header: RTCPHeader
    /// The bytes after the 4-byte header, without padding.
    let body: ArraySlice<UInt8>

    /// `packet` must hold exactly one packet, as the compound iterator hands them out.
    init(_ packet: ArraySlice<UInt8>) throws(RTCPParseError) {
        header = try RTCPHeader(parsing: packet)
        guard header.packetLength == packet.count else {
            throw header.packetLength > packet.count ? .truncated : .invalidLength
        }
        var end = packet.count
        if header.hasPadding {
            let padding = Int(packet.byte(at: packet.count - 1))
            guard padding >= 1, padding <= packet.count - RTCPHeader.length else { throw .invalidPadding }
            end -= padding
        }
        body = packet.bytes(at: RTCPHeader.length, count: end - RTCPHeader.length)
    }

    /// Same, and checks the type (and the feedback format when given).
    init(_ packet: ArraySlice<UInt8>, type: RTCPPacketType, format: UInt8? = nil) throws(RTCPParseError) {
        try self.init(packet)
        guard header.packetType == type, format == nil || header.count == format else {
            throw .unexpectedPacketType(header.packetType, format: header.count)
        }
    }
}

extension Array where Element == UInt8 {
    /// Appends one RTCP packet: header with the computed length field, then `bodyLength` bytes
    /// written by `body`. `bodyLength` is a multiple of 4 by construction of every message.
    mutating func appendRTCPPacket(
        type: RTCPPacketType, count: UInt8, bodyLength: Int, _ body: (inout ByteWriter) -> Void
    ) throws(RTCPSerializationError) {
        precondition(bodyLength % 4 == 0, "RTCP bodies are whole 32-bit words")
        let words = (RTCPHeader.length + bodyLength) / 4 - 1
        guard words <= Int(UInt16.max) else { throw .packetTooLong }
        appendWriting(count: RTCPHeader.length + bodyLength) { writer in
            writer.put(RTCPHeader.version << 6 | count & 0x1F)
            writer.put(type.rawValue)
            writer.put16(UInt16(words))
            body(&writer)
        }
    }
}
