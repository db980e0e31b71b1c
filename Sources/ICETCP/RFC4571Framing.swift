/// RFC 4571 framing, the way ICE-TCP (RFC 6544) carries STUN, DTLS and SRTP over a TCP
/// stream: each datagram is preceded by its length as a 16-bit big-endian integer.
///
/// `RFC4571Deframer` is a sans-IO value, one per TCP connection: the connection's owner feeds
/// it the bytes it reads, in whatever pieces TCP delivers them, and gets back whole frames. It
/// never holds more than one frame's worth of bytes (`maximumFrameLength` plus the 2-byte
/// prefix), so a peer cannot make the server buffer without bound; a longer frame is a
/// protocol error after which the owner closes the connection. Never traps on any input.
public struct RFC4571Deframer: Sendable {
    /// Longest frame accepted. Media datagrams stay under the path MTU (~1,200–1,500 bytes in
    /// WebRTC stacks); 4 KiB leaves room for any DTLS flight a peer might not fragment, and
    /// bounds what one connection can make us hold.
    public static let defaultMaximumFrameLength = 4_096

    public let maximumFrameLength: Int
    /// Bytes of the frame in progress (prefix included): at most `maximumFrameLength + 2`.
    private var pending: [UInt8] = []
    /// Zero-length frames met so far: legal framing that carries nothing, counted as drops.
    public private(set) var emptyFrames = 0

    public init(maximumFrameLength: Int = RFC4571Deframer.defaultMaximumFrameLength) {
        self.maximumFrameLength = min(max(maximumFrameLength, 1), Int(UInt16.max))
        pending.reserveCapacity(2 + self.maximumFrameLength)
    }

    /// Bytes held now, waiting for the rest of their frame.
    public var bufferedBytes: Int { pending.count }

    /// True between frames: no partial length or frame is waiting.
    public var isAtFrameBoundary: Bool { pending.isEmpty }

    /// Consumes `bytes` read from the stream and appends every frame they complete to `frames`.
    /// Throws `.frameTooLong` when a length prefix announces more than `maximumFrameLength`;
    /// the frames completed before it are still appended.
    public mutating func feed(_ bytes: some Collection<UInt8>, into frames: inout [[UInt8]])
        throws(RFC4571FramingError)
    {
        var index = bytes.startIndex
        while index != bytes.endIndex {
            if pending.count < 2 {
                pending.append(bytes[index])
                bytes.formIndex(after: &index)
                if pending.count == 2 { try startFrame(into: &frames) }
                continue
            }
            // Copy as much of the frame body as this read holds in one go.
            let wanted = frameLength - (pending.count - 2)
            let end = bytes.index(index, offsetBy: wanted, limitedBy: bytes.endIndex) ?? bytes.endIndex
            pending.append(contentsOf: bytes[index..<end])
            index = end
            if pending.count - 2 == frameLength {
                frames.append(Array(pending[2...]))
                pending.removeAll(keepingCapacity: true)
            }
        }
    }

    /// The length announced by the 2-byte prefix in `pending`.
    private var frameLength: Int { Int(pending[0]) << 8 | Int(pending[1]) }

    private mutating func startFrame(into frames: inout [[UInt8]]) throws(RFC4571FramingError) {
        let length = frameLength
        if length > maximumFrameLength { throw .frameTooLong(length) }
        if length == 0 {
            emptyFrames += 1
            pending.removeAll(keepingCapacity: true)
        }
    }

    /// `datagram` with its RFC 4571 length prefix; nil when it cannot be framed (over 65,535
    /// bytes).
    public static func frame(_ datagram: [UInt8]) -> [UInt8]? {
        guard datagram.count <= Int(UInt16.max) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(datagram.count + 2)
        out.append(UInt8(truncatingIfNeeded: datagram.count >> 8))
        out.append(UInt8(truncatingIfNeeded: datagram.count))
        out.append(contentsOf: datagram)
        return out
    }
}

/// Why a TCP media connection's stream cannot be read on: the owner closes the connection.
public enum RFC4571FramingError: Error, Equatable, Sendable {
    /// A length prefix announced more than the deframer's maximum.
    case frameTooLong(Int)
}
