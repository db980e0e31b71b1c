import ChorusCore
import STUN

/// The controlling, full-ICE side of a connectivity check (RFC 8445 §7.2.4–§7.2.5): what a
/// browser does towards Chorus. It builds Binding requests with USERNAME `remote:local`,
/// PRIORITY, ICE-CONTROLLING with our tie-breaker, optional USE-CANDIDATE, MESSAGE-INTEGRITY
/// under the *remote* (server's) password and FINGERPRINT, and validates the responses, which
/// the server signs with that same password. Used by in-process two-peer tests and the load
/// generator.
///
/// A full-ICE server (Janus, libnice) also sends checks of its own towards the client and waits
/// for their success before it uses the pair: `respond(to:from:)` answers them.
///
/// A sans-IO value: the caller picks transaction IDs (`TransactionID.random()`), sends the
/// bytes, retransmits on its own clock, and hands back whatever arrives.
public struct ICEClientRole: Equatable, Sendable {
    /// This client's credentials (its SDP offer).
    public let local: ICECredentials
    /// The server's credentials (from the SDP answer).
    public let remote: ICECredentials
    /// Our ICE-CONTROLLING tie-breaker (RFC 8445 §7.1.3).
    public let tieBreaker: UInt64
    /// False when the peer made the offer and controls (RFC 8445 §6.1.1: the offerer's full
    /// agent controls): our checks then carry ICE-CONTROLLED and never USE-CANDIDATE, and the
    /// peer's own checks nominate.
    public let isControlling: Bool

    let username: [UInt8]
    let remoteKey: [UInt8]
    /// Authenticates the peer's checks (USERNAME `local:remote`, our password) and builds the
    /// signed responses: the same rules as the server's lite agent, reused.
    let responder: ICELiteAgent

    public init(local: ICECredentials, remote: ICECredentials, tieBreaker: UInt64, isControlling: Bool = true) {
        self.isControlling = isControlling
        self.local = local
        self.remote = remote
        self.tieBreaker = tieBreaker
        self.username = Username.ice(receiverUfrag: remote.ufrag, senderUfrag: local.ufrag)
        self.remoteKey = MessageIntegrity.shortTermKey(password: remote.password)
        self.responder = ICELiteAgent(local: local, remote: remote)
    }

    /// RFC 8445 §5.1.2.1: `2^24 * type preference + 2^8 * local preference + (256 - component)`.
    /// A check's PRIORITY uses the peer-reflexive type preference, 110 (RFC 8445 §7.1.1).
    public static func candidatePriority(typePreference: UInt8 = 110, localPreference: UInt16 = 65535,
                                         componentID: UInt8 = 1) -> UInt32 {
        UInt32(typePreference) << 24 | UInt32(localPreference) << 8 | (256 &- UInt32(componentID)) & 0xFF
    }

    /// A Binding request for a connectivity check (or, without USE-CANDIDATE, a consent check).
    public func bindingRequest(transactionID: TransactionID, priority: UInt32 = ICEClientRole.candidatePriority(),
                               useCandidate: Bool) -> [UInt8] {
        var builder = STUNMessageBuilder(type: .bindingRequest, transactionID: transactionID,
                                         capacity: 20 + 4 + username.count + 3 + 8 + 4 + 12 + 4 + 24 + 8)
        builder.appendUsername(username)
        builder.appendPriority(priority)
        if isControlling {
            builder.appendICEControlling(tieBreaker: tieBreaker)
            if useCandidate { builder.appendUseCandidate() }
        } else {
            builder.appendICEControlled(tieBreaker: tieBreaker)
        }
        builder.appendMessageIntegrity(key: remoteKey)
        builder.appendFingerprint()
        return builder.finish()
    }

    /// Checks a datagram that should answer the request with `transactionID` (RFC 8489 §6.3.3,
    /// §9.1.4; RFC 8445 §7.2.5). Never traps.
    public func validateResponse(_ datagram: [UInt8], transactionID: TransactionID) -> ICECheckOutcome {
        let message: STUNMessage
        do {
            message = try STUNMessage(parsing: datagram)
        } catch {
            return .invalid(error == .notSTUN ? .notSTUN : .malformed)
        }
        guard message.fingerprintIsValid == true else { return .invalid(.badFingerprint) }
        guard message.type.method == .binding,
              message.type.messageClass == .successResponse || message.type.messageClass == .errorResponse
        else { return .invalid(.notAResponse) }
        guard message.transactionID == transactionID else { return .invalid(.otherTransaction) }
        if message.type.messageClass == .errorResponse { return errorOutcome(message) }
        guard message.hasValidMessageIntegrity(key: remoteKey) else { return .invalid(.badIntegrity) }
        guard let mapped = message.xorMappedAddress else { return .invalid(.missingMappedAddress) }
        return .success(mappedAddress: mapped)
    }

    /// Answers a connectivity check the peer sent us (RFC 8445 §7.3.1): a success response
    /// with the source's XOR-MAPPED-ADDRESS, signed with our password, when the request is a
    /// valid Binding request for this pair. A peer claiming our role gets 487 when our
    /// tie-breaker wins (§7.3.1.1); we never switch roles ourselves. Anything else is nil
    /// (dropped). Never traps.
    public func respond(to datagram: [UInt8], from source: TransportAddress) -> [UInt8]? {
        guard case .success(let request) = ICELiteAgent.bindingMessage(in: datagram),
              request.type.messageClass == .request, responder.authenticate(request, from: source) == nil,
              request.priority != nil
        else { return nil }
        // Both sides claim one role: the larger tie-breaker keeps it (RFC 8445 §7.3.1.1).
        let conflict = isControlling ? request.iceControlling.map { $0 <= tieBreaker }
            : request.iceControlled.map { $0 > tieBreaker }
        if conflict == true {
            guard case .error(let bytes, _, _) = responder.refusal(.roleConflict, to: request, from: source,
                                                                   authenticated: true)
            else { return nil }
            return bytes
        }
        return responder.successResponse(to: request, from: source)
    }

    private func errorOutcome(_ message: STUNMessage) -> ICECheckOutcome {
        guard let error = message.errorCode else { return .invalid(.missingErrorCode) }
        guard message.hasMessageIntegrity else { return .unauthenticatedErrorResponse(error) }
        guard message.hasValidMessageIntegrity(key: remoteKey) else { return .invalid(.badIntegrity) }
        return .errorResponse(error)
    }
}

/// The result of validating a response to one connectivity check.
public enum ICECheckOutcome: Equatable, Sendable {
    /// The check succeeded; the server saw us at `mappedAddress`.
    case success(mappedAddress: TransportAddress)
    /// An authenticated error response (for example 487 Role Conflict).
    case errorResponse(ErrorCode)
    /// An error response without MESSAGE-INTEGRITY (400 or 401 from a server that could not
    /// authenticate us). RFC 8489 §9.1.4 says a client over UDP must discard it as if never
    /// received; it is reported separately only so that tests and the load generator can say why
    /// a check went unanswered.
    case unauthenticatedErrorResponse(ErrorCode)
    /// Not a usable answer to this check.
    case invalid(ICECheckRejection)
}

/// Why a datagram was not accepted as the response to a check.
public enum ICECheckRejection: Error, Hashable, Sendable {
    /// Not STUN at all (top bits or magic cookie).
    case notSTUN
    /// STUN header but broken structure.
    case malformed
    /// FINGERPRINT missing or wrong.
    case badFingerprint
    /// A request or indication, or a method other than Binding.
    case notAResponse
    /// A valid response, but to another transaction.
    case otherTransaction
    /// MESSAGE-INTEGRITY missing (on a success) or not made with the server's password.
    case badIntegrity
    /// A success response without XOR-MAPPED-ADDRESS.
    case missingMappedAddress
    /// An error response without ERROR-CODE.
    case missingErrorCode
}
