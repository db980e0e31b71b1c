import ChorusCore

/// In-place edits of an RTP packet that is already in its send buffer, for the video forwarder
/// and the RTX path: they change sequence number, timestamp, SSRC, payload type, marker and
/// fixed-size extension values without copying the packet. They work on any mutable byte
/// collection indexed by `Int` (`[UInt8]`, `ArraySlice<UInt8>`, `UnsafeMutableRawBufferPointer`),
/// with offsets relative to the collection's start.
///
/// Each function returns false and leaves the bytes alone when the buffer is too short, so a
/// caller that skipped parsing still cannot trap; callers normally parse first with `RTPHeader`.
public enum RTPHeaderRewriter {
    @inlinable
    @discardableResult
    public static func setSequenceNumber<Bytes: MutableCollection<UInt8>>(
        _ value: UInt16, in packet: inout Bytes
    ) -> Bool where Bytes.Index == Int {
        store16(value, at: 2, in: &packet)
    }

    @inlinable
    @discardableResult
    public static func setTimestamp<Bytes: MutableCollection<UInt8>>(
        _ value: UInt32, in packet: inout Bytes
    ) -> Bool where Bytes.Index == Int {
        store32(value, at: 4, in: &packet)
    }

    @inlinable
    @discardableResult
    public static func setSSRC<Bytes: MutableCollection<UInt8>>(
        _ value: SSRC, in packet: inout Bytes
    ) -> Bool where Bytes.Index == Int {
        store32(value.rawValue, at: 8, in: &packet)
    }

    /// Replaces the payload type, keeping the marker bit.
    @inlinable
    @discardableResult
    public static func setPayloadType<Bytes: MutableCollection<UInt8>>(
        _ value: PayloadType, in packet: inout Bytes
    ) -> Bool where Bytes.Index == Int {
        guard packet.count >= RTPHeader.fixedLength else { return false }
        let index = packet.startIndex + 1
        packet[index] = packet[index] & 0x80 | value.rawValue
        return true
    }

    /// Sets or clears the marker bit, keeping the payload type.
    @inlinable
    @discardableResult
    public static func setMarker<Bytes: MutableCollection<UInt8>>(
        _ value: Bool, in packet: inout Bytes
    ) -> Bool where Bytes.Index == Int {
        guard packet.count >= RTPHeader.fixedLength else { return false }
        let index = packet.startIndex + 1
        packet[index] = value ? packet[index] | 0x80 : packet[index] & 0x7F
        return true
    }

    /// Overwrites the data of the first extension element with `id`, which must already exist
    /// with exactly `data.count` bytes (e.g. re-stamping the transport-wide sequence number).
    /// `header` must have been parsed from these bytes.
    @discardableResult
    public static func overwriteExtension<Bytes: MutableCollection<UInt8>>(
        id: UInt8, with data: some Collection<UInt8>, in packet: inout Bytes, header: RTPHeader
    ) -> Bool where Bytes.Index == Int {
        guard let range = extensionDataRange(id: id, in: packet, header: header), range.count == data.count else {
            return false
        }
        var index = packet.startIndex + range.lowerBound
        for byte in data {
            packet[index] = byte
            index += 1
        }
        return true
    }

    /// Re-stamps the 16-bit transport-wide sequence number in place.
    @discardableResult
    public static func setTransportSequenceNumber<Bytes: MutableCollection<UInt8>>(
        _ value: UInt16, extensionID id: UInt8, in packet: inout Bytes, header: RTPHeader
    ) -> Bool where Bytes.Index == Int {
        guard let range = extensionDataRange(id: id, in: packet, header: header), range.count >= 2 else {
            return false
        }
        return store16(value, at: range.lowerBound, in: &packet)
    }

    /// Re-stamps abs-send-time in place.
    @discardableResult
    public static func setAbsoluteSendTime<Bytes: MutableCollection<UInt8>>(
        _ value: AbsoluteSendTime, extensionID id: UInt8, in packet: inout Bytes, header: RTPHeader
    ) -> Bool where Bytes.Index == Int {
        guard let range = extensionDataRange(id: id, in: packet, header: header), range.count == 3 else {
            return false
        }
        let index = packet.startIndex + range.lowerBound
        packet[index] = UInt8(truncatingIfNeeded: value.rawValue >> 16)
        packet[index + 1] = UInt8(truncatingIfNeeded: value.rawValue >> 8)
        packet[index + 2] = UInt8(truncatingIfNeeded: value.rawValue)
        return true
    }

    /// Appends `count` (1…255) bytes of padding, the last one holding the count, and sets the P
    /// bit (RFC 3550 §5.1). Used for bandwidth probes and SRTP block alignment.
    @discardableResult
    public static func appendPadding(count: Int, to packet: inout [UInt8]) -> Bool {
        guard packet.count >= RTPHeader.fixedLength, (1...255).contains(count), packet[0] & 0x20 == 0 else {
            return false
        }
        packet.append(contentsOf: repeatElement(0, count: count - 1))
        packet.append(UInt8(count))
        packet[0] |= 0x20
        return true
    }

    /// Offsets of the element's data, found by walking the extension block where it lies.
    static func extensionDataRange<Bytes: Collection<UInt8>>(
        id: UInt8, in packet: Bytes, header: RTPHeader
    ) -> Range<Int>? where Bytes.Index == Int {
        guard let profile = header.extensionProfile, let form = RTPHeaderExtensionForm(profile: profile),
            header.extensionRange.upperBound <= packet.count
        else { return nil }
        let blockStart = header.extensionRange.lowerBound
        let base = packet.startIndex + blockStart
        var offset = 0
        while true {
            let step = RTPHeaderExtensions.step(count: header.extensionRange.count, at: offset, form: form) {
                packet[base + $0]
            }
            switch step {
            case .padding(let next): offset = next
            case .element(let found, let range):
                if found == id { return (blockStart + range.lowerBound)..<(blockStart + range.upperBound) }
                offset = range.upperBound
            case .end, .malformed: return nil
            }
        }
    }

    @inlinable
    static func store16<Bytes: MutableCollection<UInt8>>(
        _ value: UInt16, at offset: Int, in packet: inout Bytes
    ) -> Bool where Bytes.Index == Int {
        guard offset >= 0, packet.count >= max(offset + 2, RTPHeader.fixedLength) else { return false }
        let index = packet.startIndex + offset
        packet[index] = UInt8(truncatingIfNeeded: value >> 8)
        packet[index + 1] = UInt8(truncatingIfNeeded: value)
        return true
    }

    @inlinable
    static func store32<Bytes: MutableCollection<UInt8>>(
        _ value: UInt32, at offset: Int, in packet: inout Bytes
    ) -> Bool where Bytes.Index == Int {
        guard packet.count >= max(offset + 4, RTPHeader.fixedLength) else { return false }
        return store16(UInt16(truncatingIfNeeded: value >> 16), at: offset, in: &packet)
            && store16(UInt16(truncatingIfNeeded: value), at: offset + 2, in: &packet)
    }
}
