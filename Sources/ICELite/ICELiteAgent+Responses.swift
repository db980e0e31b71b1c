import ChorusCore
import STUN

/// The Binding responses an ICE-lite agent sends (RFC 8489 §6.3.1.1–§6.3.1.2, RFC 8445 §7.3.1):
/// same method and transaction ID as the request, MESSAGE-INTEGRITY under our password when the
/// request was authenticated, and always FINGERPRINT (RFC 8445 §7.2.2).
extension ICELiteAgent {
    /// Binding success response: XOR-MAPPED-ADDRESS of the request's source (RFC 8445 §7.3.1.3),
    /// optional SOFTWARE, MESSAGE-INTEGRITY, FINGERPRINT.
    func successResponse(to request: STUNMessage, from source: TransportAddress) -> [UInt8] {
        var builder = STUNMessageBuilder(type: .bindingSuccessResponse, transactionID: request.transactionID,
                                         capacity: responseCapacity(extra: 24))
        builder.appendXORMappedAddress(source)
        if let software { builder.appendSoftware(software) }
        builder.appendMessageIntegrity(key: localKey)
        builder.appendFingerprint()
        return builder.finish()
    }

    /// A Binding error response as an action. An unauthenticated request gets no
    /// MESSAGE-INTEGRITY (RFC 8489 §9.1.3); a 420 lists the unknown types (RFC 8489 §14.9).
    func refusal(_ error: ErrorCode, to request: STUNMessage, from source: TransportAddress,
                 authenticated: Bool, unknown: [STUNAttributeType] = []) -> ICELiteAction {
        let type = STUNMessageType(method: request.type.method, messageClass: .errorResponse)
        let extra = 8 + error.reasonPhrase.utf8.count + 4 + 2 * unknown.count
        var builder = STUNMessageBuilder(type: type, transactionID: request.transactionID,
                                         capacity: responseCapacity(extra: extra))
        builder.appendErrorCode(error)
        if !unknown.isEmpty { builder.appendUnknownAttributes(unknown) }
        if let software { builder.appendSoftware(software) }
        if authenticated { builder.appendMessageIntegrity(key: localKey) }
        builder.appendFingerprint()
        return .error(bytes: builder.finish(), to: source, code: error.code)
    }

    /// Header, MESSAGE-INTEGRITY, FINGERPRINT, SOFTWARE and `extra` bytes, so the response
    /// array is allocated once at its final size.
    private func responseCapacity(extra: Int) -> Int {
        STUNMessage.headerLength + 24 + 8 + (software.map { $0.utf8.count + 8 } ?? 0) + extra
    }
}
