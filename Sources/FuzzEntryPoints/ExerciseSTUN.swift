import ChorusCore
import ICELite
import STUN

/// Fixed credentials and addresses, so every run of an input does the same thing.
enum FuzzICE {
    // Valid ice-chars of valid lengths: the initializer cannot fail (checked by the replay test).
    static let server = try! ICECredentials(ufrag: "srvU", password: "serverPassword0123456789")
    static let client = try! ICECredentials(ufrag: "cliU", password: "clientPassword0123456789")
    static let clientAddress = TransportAddress(ipv4: "192.0.2.10", port: 50_000)!
    static let clientAddressV6 = TransportAddress(
        bytes: [0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10], port: 50_001)!
    static let stranger = TransportAddress(ipv4: "198.51.100.7", port: 9)!
    static let start = MediaTime.seconds(100)

    /// `server:client`, the USERNAME of a check the server accepts.
    static let expectedUsername = Username.ice(receiverUfrag: server.ufrag, senderUfrag: client.ufrag)
    static let serverKey = MessageIntegrity.shortTermKey(password: server.password)
}

/// STUN as the media port sees it (RFC 7983 first byte, header check, USERNAME peek for routing),
/// the full parse with every typed accessor, and the ICE-lite agent: fed the raw bytes (which
/// almost never authenticate), and a request rebuilt around the input's attributes with a correct
/// USERNAME, MESSAGE-INTEGRITY and FINGERPRINT, so the authenticated path is fuzzed too.
public func exerciseSTUN(_ bytes: [UInt8]) {
    exerciseSTUNPeeks(bytes)
    exerciseSTUNMessage(bytes)

    var agent = ICELiteAgent(local: FuzzICE.server, remote: FuzzICE.client)
    checkICEAction(agent.handle(bytes, from: FuzzICE.clientAddress, now: FuzzICE.start), request: bytes)
    if let signed = signedRequest(from: bytes) {
        exerciseSTUNMessage(signed)
        checkICEAction(agent.handle(signed, from: FuzzICE.clientAddress, now: FuzzICE.start), request: signed)
        checkICEAction(agent.handle(signed, from: FuzzICE.clientAddressV6, now: FuzzICE.start.adding(milliseconds: 50)),
                       request: signed)
        consume((agent.nominatedAddress, agent.nextDeadline, agent.consentExpired(now: .seconds(200))))
    }
}

/// The cheap O(1) checks the demultiplexer runs on every datagram, on `[UInt8]` and on raw
/// memory that is not 4-byte aligned (as a NIO buffer's readable bytes may be).
func exerciseSTUNPeeks(_ bytes: [UInt8]) {
    consume(STUNMessage.looksLikeSTUN(firstByte: bytes.first ?? 0xFF))
    let hasHeader = STUNMessage.hasSTUNHeader(bytes)
    let username = STUNMessage.peekUsername(bytes)
    let ufrag = STUNMessage.peekLocalUfrag(bytes)
    let ufragString = STUNMessage.peekLocalUfragString(bytes)
    fuzzRequire(username == nil || hasHeader, "peekUsername found a USERNAME without a STUN header")
    fuzzRequire((ufrag == nil) == (ufragString == nil), "peekLocalUfrag and peekLocalUfragString disagree")
    if let ufrag {
        fuzzRequire(!ufrag.isEmpty && !ufrag.contains(UInt8(ascii: ":")), "local ufrag is empty or holds ':'")
        fuzzRequire(username.map { $0.starts(with: ufrag) } == true, "local ufrag is not a prefix of USERNAME")
    }

    let shifted = [0xA5] + bytes
    shifted.withUnsafeBytes { raw in
        let buffer = UnsafeRawBufferPointer(rebasing: raw[1...])
        fuzzRequire(STUNMessage.hasSTUNHeader(buffer) == hasHeader, "hasSTUNHeader differs on unaligned memory")
        let range = STUNMessage.peekUsername(in: buffer)
        fuzzRequire(range?.count == username?.count, "peekUsername differs on unaligned memory")
        consume(STUNMessage.peekLocalUfrag(in: buffer))
        consume(try? STUNMessage(parsing: buffer))
    }
}

/// The full parse and every accessor of what parsed.
func exerciseSTUNMessage(_ bytes: [UInt8]) {
    let message: STUNMessage
    do {
        message = try STUNMessage(parsing: bytes)
    } catch {
        consume(error)
        return
    }
    fuzzRequire(STUNMessage.hasSTUNHeader(bytes), "a parsed message fails hasSTUNHeader")
    consume((message.type.description, message.type.rawValue, message.transactionID.description,
             message.transactionID.bytes, message.unknownComprehensionRequiredAttributes.map(\.description)))
    var count = 0
    for attribute in message.attributes {
        consume((attribute.type.isComprehensionRequired, attribute.value.count))
        count += 1
    }
    consume(count)
    consume(message.firstAttribute(.username))
    consume((message.username, message.usernameString, message.priority, message.useCandidate,
             message.iceControlling, message.iceControlled))
    consume((message.xorMappedAddress?.description, message.errorCode?.description, message.unknownAttributes,
             message.software))
    consume((message.hasFingerprint, message.fingerprintIsValid, message.hasMessageIntegrity))
    consume(message.hasValidMessageIntegrity(key: FuzzICE.serverKey))
    consume(message.hasValidMessageIntegrity(key: []))
}

/// A request built from the input: bytes 0–1 pick the message type (their low 14 bits; a Binding
/// request when those are not a valid type), bytes 2–13 the transaction ID, then attributes as
/// `type(2) length(1) value(length)` triples (short values at the end take what is left). The
/// correct USERNAME comes first unless bit 7 of byte 0 is set; MESSAGE-INTEGRITY under the
/// server's password follows the attributes unless bit 6 of byte 0 is set; FINGERPRINT closes
/// the message. nil for inputs shorter than 14 bytes.
func signedRequest(from bytes: [UInt8]) -> [UInt8]? {
    guard bytes.count >= 14 else { return nil }
    let rawType = bytes.uint16(at: 0)
    let type = STUNMessageType(rawValue: rawType & 0x3FFF) ?? STUNMessageType(rawValue: 0x0001)!
    var high: UInt32 = 0
    var low: UInt64 = 0
    for byte in bytes[2..<6] { high = high << 8 | UInt32(byte) }
    for byte in bytes[6..<14] { low = low << 8 | UInt64(byte) }
    var builder = STUNMessageBuilder(type: type, transactionID: TransactionID(high: high, low: low))
    if bytes[0] & 0x80 == 0 { builder.appendUsername(FuzzICE.expectedUsername) }
    var offset = 14
    var attributes = 0
    while offset + 3 <= bytes.count, attributes < 64 {
        let attributeType = STUNAttributeType(rawValue: bytes.uint16(at: offset))
        let length = Int(bytes[offset + 2])
        let start = offset + 3
        let end = min(start + length, bytes.count)
        offset = end
        attributes += 1
        // The builder traps on anything after FINGERPRINT (a contract on our own code), so the
        // input's FINGERPRINTs are left out; ours comes last.
        if attributeType == .fingerprint { continue }
        builder.appendAttribute(attributeType, value: bytes[start..<end])
    }
    if bytes[0] & 0x40 == 0 { builder.appendMessageIntegrity(key: FuzzICE.serverKey) }
    builder.appendFingerprint()
    return builder.finish()
}

/// Every datagram the agent asks its owner to send must be a well-formed STUN response to the
/// request, with a valid FINGERPRINT (browsers drop anything else).
func checkICEAction(_ action: ICELiteAction, request: [UInt8]) {
    let response: [UInt8]
    switch action {
    case .respond(let bytes, _), .respondAndNominate(let bytes, _), .error(let bytes, _, _):
        response = bytes
    case .drop(let reason):
        consume(reason)
        return
    case .keepalive(let renewed):
        consume(renewed)
        return
    }
    let message: STUNMessage
    do {
        message = try STUNMessage(parsing: response)
    } catch {
        fatalError("fuzz invariant failed: the ICE agent sent a STUN message it cannot parse (\(error)): \(response)")
    }
    fuzzRequire(message.fingerprintIsValid == true, "the ICE agent sent a response without a valid FINGERPRINT")
    fuzzRequire(message.type.messageClass == .successResponse || message.type.messageClass == .errorResponse,
                "the ICE agent sent something other than a response")
    if let parsedRequest = try? STUNMessage(parsing: request) {
        fuzzRequire(message.transactionID == parsedRequest.transactionID, "response to another transaction")
    }
    if case .error(_, _, let code) = action {
        fuzzRequire(message.errorCode?.code == code, "error response code differs from the action's")
    } else {
        fuzzRequire(message.hasValidMessageIntegrity(key: FuzzICE.serverKey), "success response not signed")
        fuzzRequire(message.xorMappedAddress != nil, "success response without XOR-MAPPED-ADDRESS")
    }
}
