/// A STUN method (RFC 8489 §5, registry in §18.2): the 12-bit verb of a message. Chorus speaks
/// only Binding, but any method parses so that the caller can decide what to do with it.
public struct STUNMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16

    /// nil when `rawValue` does not fit the 12 method bits.
    public init?(rawValue: UInt16) {
        guard rawValue <= 0x0FFF else { return nil }
        self.rawValue = rawValue
    }

    init(uncheckedRawValue: UInt16) { rawValue = uncheckedRawValue }

    /// Binding (RFC 8489 §18.2): the only method ICE uses for connectivity checks and consent.
    public static let binding = STUNMethod(uncheckedRawValue: 0x001)

    public var description: String { self == .binding ? "Binding" : "method 0x" + String(rawValue, radix: 16) }
}

/// The class of a STUN message (RFC 8489 §5): what kind of exchange step it is.
public enum STUNClass: UInt8, Sendable, CaseIterable {
    case request = 0b00
    case indication = 0b01
    case successResponse = 0b10
    case errorResponse = 0b11
}

/// The 14-bit STUN Message Type (RFC 8489 §5, Figure 3): a method and a class whose bits are
/// interleaved as `M11..M7 C1 M6..M4 C0 M3..M0`, with the two most significant bits zero.
public struct STUNMessageType: Hashable, Sendable, CustomStringConvertible {
    public let method: STUNMethod
    public let messageClass: STUNClass

    public init(method: STUNMethod, messageClass: STUNClass) {
        self.method = method
        self.messageClass = messageClass
    }

    /// Decodes the first two bytes of a message; nil when either of the top two bits is set
    /// (then it is not STUN, RFC 8489 §5).
    public init?(rawValue: UInt16) {
        guard rawValue & 0xC000 == 0 else { return nil }
        let method = (rawValue & 0x000F) | ((rawValue & 0x00E0) >> 1) | ((rawValue & 0x3E00) >> 2)
        let classBits = ((rawValue & 0x0010) >> 4) | ((rawValue & 0x0100) >> 7)
        self.method = STUNMethod(uncheckedRawValue: method)
        // Two bits always name one of the four cases; the fallback is unreachable.
        self.messageClass = STUNClass(rawValue: UInt8(truncatingIfNeeded: classBits)) ?? .request
    }

    /// The wire value with the class bits interleaved into the method bits.
    public var rawValue: UInt16 {
        let m = method.rawValue
        let c = UInt16(messageClass.rawValue)
        return (m & 0x000F) | ((m & 0x0070) << 1) | ((m & 0x0F80) << 2) | ((c & 0b01) << 4) | ((c & 0b10) << 7)
    }

    public static let bindingRequest = STUNMessageType(method: .binding, messageClass: .request)
    public static let bindingIndication = STUNMessageType(method: .binding, messageClass: .indication)
    public static let bindingSuccessResponse = STUNMessageType(method: .binding, messageClass: .successResponse)
    public static let bindingErrorResponse = STUNMessageType(method: .binding, messageClass: .errorResponse)

    public var description: String { "\(method) \(messageClass)" }
}
