import ChorusCore

/// The mixed audio stream the room sends one recipient, as an RFC 3550 mixer sends it: one
/// stable SSRC, and sequence numbers and timestamps that stay continuous whatever mix the
/// recipient hears (the shared full mix, or its own minus-one mix while it is a speaker).
///
/// Driven once per tick with the encoded payload of the recipient's mix: `packet(payload:…)`
/// writes a complete RTP packet (header + payload) into a caller buffer and advances the
/// sequence number by one and the timestamp by one frame (`frameTimestamps`: 960 for Opus,
/// whose RTP clock is always 48 kHz; 160 for an 8 kHz stream). A tick the room does not
/// send for (a silent mix it chose to skip, DTX) calls `skipFrame()`: the timestamp advances,
/// the sequence number does not, and the next packet carries the marker bit as the first packet
/// of a talk spurt (RFC 3551 §4.1). The first packet of the stream is marked too.
///
/// The header is written here (12 bytes, the CSRC list of the mix's contributing speakers, at
/// most 15, and the RFC 6465 csrc-audio-level element when negotiated): see `RTPMixerHeader`.
/// Writing into a reused buffer with enough capacity does not allocate. Never traps.
public struct OutboundAudioStream: Sendable, Equatable {
    /// RTP timestamp units per 20 ms frame at 48 kHz (Opus's RTP clock is always 48 kHz).
    public static let timestampsPerFrame: UInt32 = 960

    public let ssrc: SSRC
    /// RTP timestamp units per 20 ms frame of this stream: its clock rate / 50.
    public let frameTimestamps: UInt32
    public var payloadType: PayloadType
    /// The local ID the SDP bound `urn:ietf:params:rtp-hdrext:csrc-audio-level` to (RFC 6465),
    /// nil when not negotiated. Only one-byte IDs (1…14) are written; others are ignored.
    public var csrcAudioLevelExtensionID: UInt8?
    /// The sequence number the next packet will carry.
    public private(set) var nextSequenceNumber: UInt16
    /// The RTP timestamp the next packet (or skipped frame) will carry.
    public private(set) var nextTimestamp: UInt32
    /// Totals for RTCP sender reports (RFC 3550 §6.4.1): packets, and payload octets.
    public private(set) var packetCount: UInt32 = 0
    public private(set) var payloadOctetCount: UInt32 = 0
    /// The timestamp of the last packet sent, nil before the first.
    public private(set) var lastSentTimestamp: UInt32?
    /// Whether the next packet starts a talk spurt (first packet, or after skipped frames).
    public private(set) var nextPacketStartsTalkSpurt = true

    /// `initialSequenceNumber` and `initialTimestamp` should be random (RFC 3550 §5.1); the
    /// caller draws them, so the stream stays deterministic under test.
    public init(
        ssrc: SSRC, payloadType: PayloadType, initialSequenceNumber: UInt16, initialTimestamp: UInt32,
        csrcAudioLevelExtensionID: UInt8? = nil, clockRate: Int = 48_000
    ) {
        self.ssrc = ssrc
        frameTimestamps = UInt32(clamping: max(clockRate, 50) / 50)
        self.payloadType = payloadType
        nextSequenceNumber = initialSequenceNumber
        nextTimestamp = initialTimestamp
        self.csrcAudioLevelExtensionID = csrcAudioLevelExtensionID
    }

    /// Appends one RTP packet for this tick's frame to `packet` (which the caller usually
    /// empties first, keeping its capacity) and advances the stream. `csrcs` are the mix's
    /// contributing sources (only the first 15 are written) and `csrcAudioLevels` their RFC 6465
    /// levels in the same order (written only when negotiated and as many as the CSRCs).
    /// `marker` forces the marker bit (e.g. the room knows a talk spurt starts).
    public mutating func packet(
        payload: UnsafeRawBufferPointer, csrcs: [SSRC] = [], csrcAudioLevels: [UInt8] = [],
        marker: Bool = false, into packet: inout [UInt8]
    ) {
        let header = RTPMixerHeader(
            marker: marker || nextPacketStartsTalkSpurt, payloadType: payloadType,
            sequenceNumber: nextSequenceNumber, timestamp: nextTimestamp, ssrc: ssrc,
            csrcAudioLevelExtensionID: csrcAudioLevelExtensionID)
        let headerLength = header.length(csrcCount: csrcs.count, levels: csrcAudioLevels)
        packet.reserveCapacity(packet.count + headerLength + payload.count)
        header.write(csrcs: csrcs, levels: csrcAudioLevels, into: &packet)
        packet.append(contentsOf: payload)
        lastSentTimestamp = nextTimestamp
        nextSequenceNumber &+= 1
        nextTimestamp &+= frameTimestamps
        packetCount &+= 1
        payloadOctetCount &+= UInt32(truncatingIfNeeded: payload.count)
        nextPacketStartsTalkSpurt = false
    }

    /// Convenience over a payload array.
    public mutating func packet(
        payload: [UInt8], csrcs: [SSRC] = [], csrcAudioLevels: [UInt8] = [], marker: Bool = false,
        into packet: inout [UInt8]
    ) {
        payload.withUnsafeBytes { bytes in
            self.packet(payload: bytes, csrcs: csrcs, csrcAudioLevels: csrcAudioLevels, marker: marker, into: &packet)
        }
    }

    /// A tick without a packet: the timestamp moves on by `frames` frames (negative counts as
    /// 0), the sequence number does not, and the next packet starts a talk spurt.
    public mutating func skipFrame(_ frames: Int = 1) {
        guard frames > 0 else { return }
        nextTimestamp &+= frameTimestamps &* UInt32(truncatingIfNeeded: frames)
        nextPacketStartsTalkSpurt = true
    }
}

/// Writes the RTP header of one mixed-audio packet (RFC 3550 §5.1 fixed header and CSRC list,
/// RFC 8285 one-byte extension block with the RFC 6465 element):
///
/// ```
/// |V=2|P=0|X|  CC   |M|     PT      |       sequence number         |
/// |                           timestamp                           |
/// |                             SSRC                              |
/// |                       CSRC list (CC × 32 bits)                |
/// |      0xBE     |      0xDE     |     length (32-bit words)     |   if X
/// |  ID   | L=n-1 |0| level 1    |0| level 2    |  ...  | padding |
/// ```
struct RTPMixerHeader {
    static let maximumCSRCs = 15
    var marker: Bool
    var payloadType: PayloadType
    var sequenceNumber: UInt16
    var timestamp: UInt32
    var ssrc: SSRC
    var csrcAudioLevelExtensionID: UInt8?

    /// Number of levels to write: all CSRCs written, when the element is negotiated with a
    /// one-byte ID and there is a level per CSRC; 0 otherwise (the element is then omitted).
    func levelCount(csrcCount: Int, levels: [UInt8]) -> Int {
        guard let id = csrcAudioLevelExtensionID, (1...14).contains(id) else { return 0 }
        let written = min(csrcCount, Self.maximumCSRCs)
        return levels.count >= written ? written : 0
    }

    func length(csrcCount: Int, levels: [UInt8]) -> Int {
        let csrcs = min(csrcCount, Self.maximumCSRCs)
        let levelBytes = levelCount(csrcCount: csrcCount, levels: levels)
        let extensionBytes = levelBytes == 0 ? 0 : 4 + (1 + levelBytes + 3) / 4 * 4
        return 12 + 4 * csrcs + extensionBytes
    }

    func write(csrcs: [SSRC], levels: [UInt8], into out: inout [UInt8]) {
        let csrcCount = min(csrcs.count, Self.maximumCSRCs)
        let levelBytes = levelCount(csrcCount: csrcs.count, levels: levels)
        let hasExtension = levelBytes > 0
        out.append(2 << 6 | (hasExtension ? 0x10 : 0) | UInt8(csrcCount))
        out.append((marker ? 0x80 : 0) | payloadType.rawValue)
        out.append16(sequenceNumber)
        out.append32(timestamp)
        out.append32(ssrc.rawValue)
        for index in 0..<csrcCount { out.append32(csrcs[index].rawValue) }
        guard hasExtension, let id = csrcAudioLevelExtensionID else { return }
        let elementBytes = 1 + levelBytes
        let words = (elementBytes + 3) / 4
        out.append16(0xBEDE)
        out.append16(UInt16(words))
        out.append(id << 4 | UInt8(levelBytes - 1))
        // RFC 6465 §3: the top bit of each level byte is reserved (0); levels are 0…127.
        for index in 0..<levelBytes { out.append(min(levels[index], 127)) }
        for _ in elementBytes..<(words * 4) { out.append(0) }
    }

}
