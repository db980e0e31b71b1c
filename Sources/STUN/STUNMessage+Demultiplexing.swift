/// Cheap checks for the media port's demultiplexer, which must route every datagram in O(1)
/// before any full parse: RFC 7983's first-byte classification, a header check, and a peek at
/// USERNAME so that a STUN request can be routed by the local ICE ufrag (the part before ':' in
/// `localUfrag:remoteUfrag`, RFC 8445 §7.2.2). None of these verify MESSAGE-INTEGRITY or
/// FINGERPRINT: the agent the datagram is routed to does that.
extension STUNMessage {
    /// RFC 7983 §7: a first byte of 0–3 means STUN (16–19 ZRTP, 20–63 DTLS, 64–79 TURN
    /// channels, 128–191 RTP/RTCP).
    @inlinable
    public static func looksLikeSTUN(firstByte: UInt8) -> Bool { firstByte <= 3 }

    /// True when the datagram has a plausible STUN header: at least 20 bytes, zero top bits,
    /// the magic cookie, and a length field that is a multiple of 4 and matches the size.
    public static func hasSTUNHeader(_ buffer: UnsafeRawBufferPointer) -> Bool {
        guard buffer.count >= headerLength, let first = buffer.stunUInt16(at: 0),
              let length = buffer.stunUInt16(at: 2), let cookie = buffer.stunUInt32(at: 4) else { return false }
        return first & 0xC000 == 0 && cookie == magicCookie && length & 3 == 0
            && Int(length) == buffer.count &- headerLength
    }

    public static func hasSTUNHeader(_ datagram: [UInt8]) -> Bool {
        datagram.withUnsafeBytes { hasSTUNHeader($0) }
    }

    /// Where the first USERNAME value lies in `buffer`, walking attributes with checked reads
    /// and stopping at MESSAGE-INTEGRITY or FINGERPRINT (a USERNAME after them does not count).
    /// nil when the header is not STUN, the walk leaves the buffer, or there is no USERNAME.
    public static func peekUsername(in buffer: UnsafeRawBufferPointer) -> Range<Int>? {
        guard hasSTUNHeader(buffer) else { return nil }
        var offset = headerLength
        while let type = buffer.stunUInt16(at: offset), let length = buffer.stunUInt16(at: offset &+ 2) {
            let valueStart = offset &+ 4
            let valueEnd = valueStart &+ Int(length)
            let paddedEnd = valueStart &+ STUNAttribute.paddedLength(Int(length))
            guard paddedEnd <= buffer.count else { return nil }
            switch STUNAttributeType(rawValue: type) {
            case .username:
                return Int(length) <= Username.maximumLength ? valueStart..<valueEnd : nil
            case .messageIntegrity, .fingerprint:
                return nil
            default:
                offset = paddedEnd
            }
        }
        return nil
    }

    /// The USERNAME value of a datagram, as a slice (no copy).
    public static func peekUsername(_ datagram: [UInt8]) -> ArraySlice<UInt8>? {
        datagram.withUnsafeBytes { peekUsername(in: $0) }.map { datagram[$0] }
    }

    /// Where the local ufrag (USERNAME up to the first ':') lies in `buffer`; nil when there is
    /// no USERNAME, no colon, or nothing before it.
    public static func peekLocalUfrag(in buffer: UnsafeRawBufferPointer) -> Range<Int>? {
        guard let username = peekUsername(in: buffer) else { return nil }
        for offset in username where buffer[offset] == UInt8(ascii: ":") {
            return offset > username.lowerBound ? username.lowerBound..<offset : nil
        }
        return nil
    }

    /// The local ufrag of a datagram, as a slice (no copy).
    public static func peekLocalUfrag(_ datagram: [UInt8]) -> ArraySlice<UInt8>? {
        datagram.withUnsafeBytes { peekLocalUfrag(in: $0) }.map { datagram[$0] }
    }

    /// The local ufrag as a `String`, ready to key a dictionary. Ufrags of up to 15 bytes fit
    /// Swift's small-string form, so this does not allocate for typical ICE credentials.
    public static func peekLocalUfragString(_ datagram: [UInt8]) -> String? {
        peekLocalUfrag(datagram).map { String(decoding: $0, as: UTF8.self) }
    }
}
