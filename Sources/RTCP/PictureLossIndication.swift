import ChorusCore

/// A Picture Loss Indication, PLI (RFC 4585 §6.3.1): payload-specific feedback (PT=206, FMT=1)
/// without FCI, asking the media source for a decodable picture (in practice a key frame).
///
/// The forwarder sends one to a publisher when a subscriber joins or switches to its stream,
/// and turns subscribers' PLIs into (rate-limited) PLIs towards the publisher.
public struct PictureLossIndication: Sendable, Equatable, Hashable {
    public static let format: UInt8 = 1

    public var senderSSRC: SSRC
    public var mediaSSRC: SSRC

    public init(senderSSRC: SSRC, mediaSSRC: SSRC) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
    }

    /// `packet` holds exactly one PLI. Any FCI bytes (the RFC says there are none) are ignored.
    public init(parsing packet: ArraySlice<UInt8>) throws(RTCPParseError) {
        let frame = try FeedbackFrame(packet, type: .payloadSpecificFeedback, format: Self.format)
        senderSSRC = frame.senderSSRC
        mediaSSRC = frame.mediaSSRC
    }

    public init(parsing packet: [UInt8]) throws(RTCPParseError) {
        try self.init(parsing: packet[...])
    }

    public func serialize(into out: inout [UInt8]) throws(RTCPSerializationError) {
        try out.appendFeedback(
            type: .payloadSpecificFeedback, format: Self.format, senderSSRC: senderSSRC, mediaSSRC: mediaSSRC,
            fciLength: 0
        ) { _ in }
    }
}
