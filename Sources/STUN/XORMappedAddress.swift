import ChorusCore

/// XOR-MAPPED-ADDRESS (RFC 8489 §14.2): the source transport address the server saw, XOR'ed with
/// the magic cookie (and, for IPv6, the transaction ID too) so that NATs that rewrite addresses
/// inside payloads leave it alone. In ICE it tells the client its server-reflexive or
/// peer-reflexive address (RFC 8445 §7.3.1.3).
///
/// Wire value: 0x00, family (0x01 IPv4, 0x02 IPv6), X-Port (port ^ top 16 bits of the cookie),
/// X-Address (4 or 16 bytes).
public enum XORMappedAddress {
    static let ipv4Family: UInt8 = 0x01
    static let ipv6Family: UInt8 = 0x02
    static let ipv4ValueLength = 8
    static let ipv6ValueLength = 20

    /// Parser check: the family byte and the value's size agree.
    static func isWellFormed(_ bytes: [UInt8], _ value: Range<Int>) -> Bool {
        guard value.count >= 4, value.lowerBound >= 0, value.upperBound <= bytes.count else { return false }
        switch bytes[value.lowerBound &+ 1] {
        case ipv4Family: return value.count == ipv4ValueLength
        case ipv6Family: return value.count == ipv6ValueLength
        default: return false
        }
    }

    /// The 16-byte XOR mask for an IPv6 address: magic cookie then transaction ID.
    static func ipv6Mask(_ transactionID: TransactionID) -> (high: UInt64, low: UInt64) {
        (UInt64(STUNMessage.magicCookie) << 32 | UInt64(transactionID.high), transactionID.low)
    }

    static func decode(_ bytes: [UInt8], _ value: Range<Int>, transactionID: TransactionID) -> TransportAddress? {
        let start = value.lowerBound
        guard let xPort = bytes.stunUInt16(at: start &+ 2) else { return nil }
        let port = xPort ^ UInt16(truncatingIfNeeded: STUNMessage.magicCookie >> 16)
        if value.count == ipv4ValueLength {
            guard let xAddress = bytes.stunUInt32(at: start &+ 4) else { return nil }
            let address = xAddress ^ STUNMessage.magicCookie
            let octets = (0..<4).map { UInt8(truncatingIfNeeded: address >> (24 - 8 * UInt32($0))) }
            return TransportAddress(bytes: octets, port: port)
        }
        guard let xHigh = bytes.stunUInt64(at: start &+ 4), let xLow = bytes.stunUInt64(at: start &+ 12) else {
            return nil
        }
        let mask = ipv6Mask(transactionID)
        var address: [UInt8] = []
        address.reserveCapacity(16)
        address.appendBigEndian(xHigh ^ mask.high)
        address.appendBigEndian(xLow ^ mask.low)
        return TransportAddress(bytes: address, port: port)
    }
}

extension STUNMessage {
    /// The decoded XOR-MAPPED-ADDRESS; nil when absent.
    public var xorMappedAddress: TransportAddress? {
        index.xorMappedAddress.flatMap { XORMappedAddress.decode(bytes, $0, transactionID: transactionID) }
    }
}

extension STUNMessageBuilder {
    /// Appends XOR-MAPPED-ADDRESS for `address`, XOR'ed with this message's transaction ID.
    public mutating func appendXORMappedAddress(_ address: TransportAddress) {
        let xPort = address.port ^ UInt16(truncatingIfNeeded: STUNMessage.magicCookie >> 16)
        switch address.family {
        case .ipv4:
            appendAttributeHeader(.xorMappedAddress, length: XORMappedAddress.ipv4ValueLength)
            bytes.append(0)
            bytes.append(XORMappedAddress.ipv4Family)
            bytes.appendBigEndian(xPort)
            // TransportAddress keeps an IPv4 address in the low 32 bits of `low`.
            bytes.appendBigEndian(UInt32(truncatingIfNeeded: address.low) ^ STUNMessage.magicCookie)
            appendPadding(valueLength: XORMappedAddress.ipv4ValueLength)
        case .ipv6:
            let mask = XORMappedAddress.ipv6Mask(transactionID)
            appendAttributeHeader(.xorMappedAddress, length: XORMappedAddress.ipv6ValueLength)
            bytes.append(0)
            bytes.append(XORMappedAddress.ipv6Family)
            bytes.appendBigEndian(xPort)
            bytes.appendBigEndian(address.high ^ mask.high)
            bytes.appendBigEndian(address.low ^ mask.low)
            appendPadding(valueLength: XORMappedAddress.ipv6ValueLength)
        }
    }
}
