import ChorusCore

/// Transport-wide congestion control feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01
/// §3.1): transport-layer feedback (PT=205, FMT=15) reporting, for a range of transport-wide
/// sequence numbers, which packets arrived and when.
///
/// ```
/// |      base sequence number     |      packet status count      |
/// |                 reference time                | fb pkt. count |
/// |          packet chunk         |         packet chunk          |  …
/// |         packet chunk          |  recv delta   |  recv delta   |  …
/// |           recv delta          |  recv delta   | zero padding  |
/// ```
///
/// Status chunks are run-length (`0|S(2)|run(13)`) or status vectors (`1|0|14 × 1 bit` or
/// `1|1|7 × 2 bits`); symbols are 00 not received, 01 received with a 1-byte delta, 10 received
/// with a signed 2-byte delta, and 11, which the draft reserves but uses in its own examples for
/// "received, no delta" (read that way here, as other parsers do). Deltas count 250 µs;
/// the reference time counts 64 ms (24 bits, signed).
///
/// A client sends these about what Chorus sent it; the send-side bandwidth estimator consumes
/// `packets`, which decodes chunks and deltas together in one pass without allocating. The
/// parser has walked everything once, so iteration cannot run out of bytes.
public struct TransportFeedback: Sendable, Equatable {
    public static let format: UInt8 = 15
    /// Units of the receive deltas and the reference time.
    public static let deltaTickMicroseconds: Int64 = 250
    public static let referenceTimeTickMicroseconds: Int64 = 64_000

    /// A packet status symbol.
    public enum PacketStatus: UInt8, Sendable {
        case notReceived = 0
        case receivedSmallDelta = 1
        case receivedLargeOrNegativeDelta = 2
        case receivedWithoutDelta = 3

        /// Bytes this symbol's receive delta takes.
        var deltaSize: Int {
            switch self {
            case .notReceived, .receivedWithoutDelta: return 0
            case .receivedSmallDelta: return 1
            case .receivedLargeOrNegativeDelta: return 2
            }
        }
    }

    /// The fate of one transport-wide sequence number.
    public struct PacketResult: Sendable, Equatable {
        public let sequenceNumber: UInt16
        public let status: PacketStatus
        /// The receive delta in 250 µs ticks, nil when the packet has none.
        public let receiveDelta: Int32?
        /// Arrival time in µs in the feedback sender's time base: reference time plus all
        /// deltas so far. nil when the packet has no delta.
        public let arrivalTimeMicroseconds: Int64?

        public var isReceived: Bool { status != .notReceived }
    }

    public let senderSSRC: SSRC
    public let mediaSSRC: SSRC
    public let baseSequenceNumber: UInt16
    public let packetStatusCount: UInt16
    /// 24-bit signed, in 64 ms units.
    public let referenceTime: Int32
    /// Counts feedback packets, so the sender can detect lost feedback.
    public let feedbackPacketCount: UInt8

    /// Chunks, deltas and zero padding: the FCI after its first 8 bytes.
    let statusBytes: ArraySlice<UInt8>
    /// Where the receive deltas start in `statusBytes`.
    let deltaStart: Int

    public var referenceTimeMicroseconds: Int64 { Int64(referenceTime) * Self.referenceTimeTickMicroseconds }

    /// One result per reported sequence number, starting at `baseSequenceNumber`.
    public var packets: PacketResults {
        PacketResults(feedback: self)
    }

    /// `packet` holds exactly one transport-cc feedback message.
    public init(parsing packet: ArraySlice<UInt8>) throws(RTCPParseError) {
        let frame = try FeedbackFrame(packet, type: .transportLayerFeedback, format: Self.format)
        let fci = frame.fci
        guard fci.count >= 8 else { throw .truncated }
        senderSSRC = frame.senderSSRC
        mediaSSRC = frame.mediaSSRC
        baseSequenceNumber = fci.uint16(at: 0)
        packetStatusCount = fci.uint16(at: 2)
        referenceTime = Int32(bitPattern: fci.uint24(at: 4) << 8) >> 8
        feedbackPacketCount = fci.byte(at: 7)
        statusBytes = fci.bytes(at: 8, count: fci.count - 8)
        // libwebrtc refuses empty feedback too; there would be nothing to learn from it.
        guard packetStatusCount > 0 else { throw .malformedBody }
        let layout = try Self.walkChunks(statusBytes, statusCount: Int(packetStatusCount))
        deltaStart = layout.deltaStart
        // What follows the deltas can only be the zero padding to the next 32-bit word.
        let trailing = statusBytes.count - layout.deltaStart - layout.deltaBytes
        guard trailing >= 0 else { throw .truncated }
        guard trailing < 4 else { throw .malformedBody }
    }

    public init(parsing packet: [UInt8]) throws(RTCPParseError) {
        try self.init(parsing: packet[...])
    }

    /// Reads status chunks until they cover `statusCount` symbols; returns where the deltas
    /// start and how many bytes they take.
    static func walkChunks(_ bytes: ArraySlice<UInt8>, statusCount: Int) throws(RTCPParseError)
        -> (deltaStart: Int, deltaBytes: Int)
    {
        var offset = 0
        var covered = 0
        var deltaBytes = 0
        while covered < statusCount {
            guard offset + 2 <= bytes.count else { throw .truncated }
            let chunk = bytes.uint16(at: offset)
            offset += 2
            let used = min(StatusChunk.symbolCount(chunk), statusCount - covered)
            if StatusChunk.isRunLength(chunk) {
                deltaBytes += used * StatusChunk.symbol(chunk, at: 0).deltaSize
            } else {
                for index in 0..<used { deltaBytes += StatusChunk.symbol(chunk, at: index).deltaSize }
            }
            covered += used
        }
        return (offset, deltaBytes)
    }

    /// Decodes chunks and deltas in step; see `TransportFeedback.packets`.
    public struct PacketResults: Sequence, Sendable {
        let feedback: TransportFeedback

        public var underestimatedCount: Int { Int(feedback.packetStatusCount) }

        public func makeIterator() -> Iterator {
            Iterator(
                bytes: feedback.statusBytes, remaining: Int(feedback.packetStatusCount),
                deltaOffset: feedback.deltaStart, sequenceNumber: feedback.baseSequenceNumber,
                time: feedback.referenceTimeMicroseconds)
        }

        /// Steps through status symbols and reads a delta for each symbol that has one.
        public struct Iterator: IteratorProtocol {
            let bytes: ArraySlice<UInt8>
            var remaining: Int
            var deltaOffset: Int
            var sequenceNumber: UInt16
            var time: Int64
            var chunkOffset = 0
            var chunk: UInt16 = 0
            var chunkSymbols = 0
            var chunkIndex = 0

            public mutating func next() -> PacketResult? {
                guard remaining > 0 else { return nil }
                while chunkIndex >= chunkSymbols {
                    guard chunkOffset + 2 <= bytes.count else { return nil }
                    chunk = bytes.uint16(at: chunkOffset)
                    chunkOffset += 2
                    chunkSymbols = StatusChunk.symbolCount(chunk)
                    chunkIndex = 0
                }
                let status = StatusChunk.symbol(chunk, at: chunkIndex)
                chunkIndex += 1
                remaining -= 1
                defer { sequenceNumber &+= 1 }
                guard let delta = readDelta(size: status.deltaSize) else {
                    return PacketResult(sequenceNumber: sequenceNumber, status: status, receiveDelta: nil,
                                        arrivalTimeMicroseconds: nil)
                }
                time += Int64(delta) * TransportFeedback.deltaTickMicroseconds
                return PacketResult(sequenceNumber: sequenceNumber, status: status, receiveDelta: delta,
                                    arrivalTimeMicroseconds: time)
            }

            /// A 1-byte unsigned or 2-byte signed delta; nil for size 0 (or, defensively, when
            /// the bytes are missing, which the parser has ruled out).
            private mutating func readDelta(size: Int) -> Int32? {
                guard size > 0, deltaOffset + size <= bytes.count else { return nil }
                defer { deltaOffset += size }
                if size == 1 { return Int32(bytes.byte(at: deltaOffset)) }
                return Int32(Int16(bitPattern: bytes.uint16(at: deltaOffset)))
            }
        }
    }
}

/// Decoding of one 16-bit packet status chunk (draft §3.1.3, §3.1.4).
enum StatusChunk {
    static func isRunLength(_ chunk: UInt16) -> Bool { chunk & 0x8000 == 0 }

    /// Symbols the chunk describes: the run length, 14 one-bit or 7 two-bit symbols.
    static func symbolCount(_ chunk: UInt16) -> Int {
        if isRunLength(chunk) { return Int(chunk & 0x1FFF) }
        return chunk & 0x4000 == 0 ? 14 : 7
    }

    /// Symbol `index` (0-based, most significant first) of the chunk.
    static func symbol(_ chunk: UInt16, at index: Int) -> TransportFeedback.PacketStatus {
        let raw: UInt16
        if isRunLength(chunk) {
            raw = (chunk >> 13) & 0x3
        } else if chunk & 0x4000 == 0 {
            raw = (chunk >> UInt16(truncatingIfNeeded: 13 - index)) & 0x1
        } else {
            raw = (chunk >> UInt16(truncatingIfNeeded: 12 - 2 * index)) & 0x3
        }
        // `raw` is two bits, so every value has a case; the fallback is unreachable.
        return TransportFeedback.PacketStatus(rawValue: UInt8(raw)) ?? .notReceived
    }
}
