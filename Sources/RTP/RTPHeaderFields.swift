import ChorusCore

/// One RTP header extension element to write: a local ID and a typed value. The typed cases keep
/// their data inline, so a sender that keeps its element array between packets and only updates
/// the values serializes without allocating.
public struct RTPHeaderExtensionElement: Sendable, Equatable {
    /// What the element carries; each case knows its length and encoding.
    public enum Value: Sendable, Equatable {
        /// Raw element data, for extensions without a typed case.
        case bytes([UInt8])
        /// sdes:mid (RFC 8843), UTF-8 without terminator.
        case mid(String)
        /// ssrc-audio-level (RFC 6464).
        case audioLevel(AudioLevelIndication)
        /// csrc-audio-level (RFC 6465): one -dBov level (0…127) per CSRC, in CSRC order.
        case csrcAudioLevels([UInt8])
        /// transport-wide-cc sequence number (draft-holmer-…-01).
        case transportSequenceNumber(UInt16)
        /// abs-send-time, 6.18 fixed point.
        case absoluteSendTime(AbsoluteSendTime)
    }

    public var id: UInt8
    public var value: Value

    public init(id: UInt8, value: Value) {
        self.id = id
        self.value = value
    }

    /// Number of data bytes the element carries.
    public var dataLength: Int {
        switch value {
        case .bytes(let bytes): return bytes.count
        case .mid(let text): return text.utf8.count
        case .audioLevel: return 1
        case .csrcAudioLevels(let levels): return levels.count
        case .transportSequenceNumber: return 2
        case .absoluteSendTime: return 3
        }
    }

    func writeData(to writer: inout ByteWriter) {
        switch value {
        case .bytes(let bytes): writer.put(contentsOf: bytes)
        case .mid(let text): writer.put(contentsOf: text.utf8)
        case .audioLevel(let level): writer.put(level.byte)
        case .csrcAudioLevels(let levels):
            for level in levels { writer.put(min(level, 127)) }
        case .transportSequenceNumber(let number): writer.put16(number)
        case .absoluteSendTime(let time): writer.put24(time.rawValue)
        }
    }
}

/// The values of an RTP header to send: fixed header fields, CSRCs and extension elements.
/// `serialize(into:)` writes the header (padded extension block included) into a caller buffer;
/// the caller then appends the payload. The extension form is one-byte when every element fits
/// it (IDs 1…14, 1…16 bytes) and two-byte otherwise, as RFC 8285 §4.1.1 recommends.
public struct RTPHeaderFields: Sendable, Equatable {
    public var marker: Bool
    public var payloadType: PayloadType
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: SSRC
    /// At most 15.
    public var csrcs: [SSRC]
    public var extensions: [RTPHeaderExtensionElement]

    public init(
        marker: Bool = false, payloadType: PayloadType, sequenceNumber: UInt16, timestamp: UInt32,
        ssrc: SSRC, csrcs: [SSRC] = [], extensions: [RTPHeaderExtensionElement] = []
    ) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.csrcs = csrcs
        self.extensions = extensions
    }

    /// The form the extension block will use, nil when there are no elements.
    public var extensionForm: RTPHeaderExtensionForm? {
        guard !extensions.isEmpty else { return nil }
        let fitsOneByte = extensions.allSatisfy { (1...14).contains($0.id) && (1...16).contains($0.dataLength) }
        return fitsOneByte ? .oneByte : .twoByte(appBits: 0)
    }

    /// Bytes the header will take, or the reason it cannot be written.
    public func serializedLength() throws(RTPSerializationError) -> Int {
        guard csrcs.count <= 15 else { throw .tooManyCSRCs(csrcs.count) }
        return RTPHeader.fixedLength + 4 * csrcs.count + (try extensionBlockLength())
    }

    /// Appends the header to `out`; without reallocating when `out` has the capacity.
    public func serialize(into out: inout [UInt8]) throws(RTPSerializationError) {
        let length = try serializedLength()
        out.appendWriting(count: length) { writer in write(to: &writer) }
    }

    /// Writes the header at the start of `buffer`; returns the number of bytes written.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(RTPSerializationError) -> Int {
        let length = try serializedLength()
        guard buffer.count >= length else { throw .bufferTooSmall(needed: length) }
        var writer = ByteWriter(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<length]))
        write(to: &writer)
        return length
    }

    /// Extension header plus elements, padded to 32 bits; 0 without elements.
    private func extensionBlockLength() throws(RTPSerializationError) -> Int {
        guard let form = extensionForm else { return 0 }
        var length = 0
        for element in extensions {
            switch form {
            case .oneByte:
                length += 1 + element.dataLength
            case .twoByte:
                guard element.id != 0 else { throw .invalidExtensionID(element.id) }
                guard element.dataLength <= 255 else {
                    throw .extensionDataTooLong(id: element.id, length: element.dataLength)
                }
                length += 2 + element.dataLength
            }
        }
        let padded = (length + 3) / 4 * 4
        guard padded / 4 <= Int(UInt16.max) else { throw .extensionBlockTooLong }
        return 4 + padded
    }

    private func write(to writer: inout ByteWriter) {
        let form = extensionForm
        let first: UInt8 = RTPHeader.version << 6 | (form == nil ? 0 : 0x10) | UInt8(csrcs.count)
        writer.put(first)
        writer.put((marker ? 0x80 : 0) | payloadType.rawValue)
        writer.put16(sequenceNumber)
        writer.put32(timestamp)
        writer.put32(ssrc.rawValue)
        for csrc in csrcs { writer.put32(csrc.rawValue) }
        guard let form else { return }
        let start = writer.offset
        writer.put16(form.profile)
        writer.put16(0)  // length, patched below once the elements are written
        for element in extensions {
            switch form {
            case .oneByte:
                writer.put(element.id << 4 | UInt8(element.dataLength - 1))
            case .twoByte:
                writer.put(element.id)
                writer.put(UInt8(element.dataLength))
            }
            element.writeData(to: &writer)
        }
        let dataLength = writer.offset - start - 4
        writer.putZeros((4 - dataLength % 4) % 4)
        let words = UInt16((writer.offset - start - 4) / 4)
        writer.buffer[start + 2] = UInt8(words >> 8)
        writer.buffer[start + 3] = UInt8(words & 0xFF)
    }
}
