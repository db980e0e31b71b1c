import ChorusCore
import STUN

/// The server side of ICE-lite (RFC 8445 §2.5, §6.1.1) for ONE participant. A lite agent has a
/// single host candidate (the media port), is always in the controlled role, sends no checks of
/// its own, and answers the peer's connectivity checks. The peer (a browser, full ICE) nominates
/// the path with USE-CANDIDATE, and its later checks keep consent fresh (RFC 7675).
///
/// A sans-IO value: the owner hands every STUN datagram routed to this participant to
/// `handle(_:from:now:)` and performs the returned `ICELiteAction`; it arms a timer at
/// `nextDeadline` and asks `consentExpired(now:)` when it fires. No sockets, clocks or tasks.
///
/// Per datagram it parses without copying, checks FINGERPRINT and MESSAGE-INTEGRITY against
/// precomputed keys, and allocates only the response it returns.
public struct ICELiteAgent: Equatable, Sendable {
    /// Our credentials, sent in the SDP answer.
    public let local: ICECredentials
    /// The peer's credentials, from its SDP offer.
    public let remote: ICECredentials
    /// Optional SOFTWARE attribute for responses (diagnostics only).
    public let software: String?
    /// The address the peer nominated with USE-CANDIDATE; nil until it does. Media goes here.
    public private(set) var nominatedAddress: TransportAddress?
    /// Consent to keep sending to `nominatedAddress` (RFC 7675).
    public private(set) var consent: ConsentFreshness

    /// `local.ufrag:remote.ufrag`: the only USERNAME a valid check carries (RFC 8445 §7.2.2).
    let expectedUsername: [UInt8]
    /// Our password as a short-term credential key, for checking requests and signing responses.
    let localKey: [UInt8]

    public init(local: ICECredentials, remote: ICECredentials, software: String? = nil,
                consentTimeoutNanoseconds: UInt64 = ConsentFreshness.defaultTimeoutNanoseconds) {
        self.local = local
        self.remote = remote
        self.software = software
        self.consent = ConsentFreshness(timeoutNanoseconds: consentTimeoutNanoseconds)
        self.expectedUsername = Username.ice(receiverUfrag: local.ufrag, senderUfrag: remote.ufrag)
        self.localKey = MessageIntegrity.shortTermKey(password: local.password)
    }

    /// Validates both credential pairs (the remote one comes from a peer's SDP).
    public init(localUfrag: String, localPassword: String, remoteUfrag: String, remotePassword: String,
                software: String? = nil) throws(ICECredentialsError) {
        self.init(local: try ICECredentials(ufrag: localUfrag, password: localPassword),
                  remote: try ICECredentials(ufrag: remoteUfrag, password: remotePassword),
                  software: software)
    }

    /// Processes one datagram from `source` received at `now` and says what to send, if anything.
    /// Never traps on any input; creates no state for a check that is not ours.
    public mutating func handle(_ datagram: [UInt8], from source: TransportAddress, now: MediaTime) -> ICELiteAction {
        let request: STUNMessage
        switch Self.bindingMessage(in: datagram) {
        case .success(let message): request = message
        case .failure(let reason): return .drop(reason: reason)
        }
        if request.type.messageClass == .indication { return keepalive(request, from: source, now: now) }
        if let refusal = authenticate(request, from: source) { return refusal }
        if let refusal = checkICEAttributes(request, from: source) { return refusal }
        return accept(request, from: source, now: now)
    }

    /// Authenticated media (SRTP or SRTCP that passed its auth tag) arrived from `source`: from
    /// the selected address it renews consent like a check does. The caller authenticated it;
    /// nothing unauthenticated may call this, or a spoofed source could aim media at a victim.
    public mutating func refreshConsent(from source: TransportAddress, now: MediaTime) {
        if source == nominatedAddress { consent.refresh(at: now) }
    }

    /// Makes `address` the selected one, as a nomination would: its owner moved media there
    /// after it passed a check (NAT rebinding, see `PeerTransport`). Consent carries over.
    public mutating func select(_ address: TransportAddress) {
        nominatedAddress = address
    }

    /// True once 30 s (the consent timeout) have passed since the last valid check from the
    /// nominated address. False before nomination.
    public func consentExpired(now: MediaTime) -> Bool { consent.isExpired(now: now) }

    /// When the owner should next call `consentExpired(now:)`; nil before nomination.
    public var nextDeadline: MediaTime? { consent.deadline }

    /// Parses and classifies: only a Binding request or indication with a correct FINGERPRINT
    /// goes on. ICE uses the FINGERPRINT mechanism for its checks, and RFC 8489 §7 then has the
    /// receiver require the attribute, not just check it when present.
    static func bindingMessage(in datagram: [UInt8]) -> Result<STUNMessage, ICEDropReason> {
        guard let first = datagram.first, STUNMessage.looksLikeSTUN(firstByte: first) else { return .failure(.notSTUN) }
        let message: STUNMessage
        do {
            message = try STUNMessage(parsing: datagram)
        } catch {
            return .failure(error == .notSTUN ? .notSTUN : .malformed)
        }
        guard message.fingerprintIsValid == true else { return .failure(.badFingerprint) }
        switch message.type.messageClass {
        case .request, .indication: break
        case .successResponse, .errorResponse: return .failure(.notARequest)
        }
        guard message.type.method == .binding else { return .failure(.unsupportedMethod) }
        return .success(message)
    }

    /// RFC 8489 §9.1.3 with RFC 8445 §7.3: USERNAME and MESSAGE-INTEGRITY must both be present
    /// (else 400), USERNAME must be ours (else dropped, see `ICEDropReason.unknownUsername`), and
    /// the HMAC must verify under our password (else 401). Neither error can carry
    /// MESSAGE-INTEGRITY, since the request proved no shared key.
    func authenticate(_ request: STUNMessage, from source: TransportAddress) -> ICELiteAction? {
        guard let username = request.username, request.hasMessageIntegrity else {
            return refusal(.badRequest, to: request, from: source, authenticated: false)
        }
        guard username.elementsEqual(expectedUsername) else { return .drop(reason: .unknownUsername) }
        guard request.hasValidMessageIntegrity(key: localKey) else {
            return refusal(.unauthenticated, to: request, from: source, authenticated: false)
        }
        return nil
    }

    /// Checks an authenticated request (RFC 8489 §6.3.1, RFC 8445 §7.3.1.1):
    /// - unknown comprehension-required attributes → 420 listing them;
    /// - PRIORITY and exactly one of ICE-CONTROLLING / ICE-CONTROLLED are required → else 400;
    /// - ICE-CONTROLLED means the peer also thinks it is controlled. A lite agent must stay
    ///   controlled (RFC 8445 §6.1.1), so it wins every tie-break: 487, and the peer switches.
    func checkICEAttributes(_ request: STUNMessage, from source: TransportAddress) -> ICELiteAction? {
        let unknown = request.unknownComprehensionRequiredAttributes
        guard unknown.isEmpty else {
            return refusal(.unknownAttribute, to: request, from: source, authenticated: true, unknown: unknown)
        }
        let controlling = request.iceControlling != nil
        let controlled = request.iceControlled != nil
        guard request.priority != nil, controlling != controlled else {
            return refusal(.badRequest, to: request, from: source, authenticated: true)
        }
        if controlled { return refusal(.roleConflict, to: request, from: source, authenticated: true) }
        return nil
    }

    /// A Binding indication: libnice (GStreamer's `webrtcbin`) keeps its path alive with these
    /// instead of checks. One signed with our password (USERNAME ours, MESSAGE-INTEGRITY valid)
    /// from the selected address renews consent; an unsigned one is accepted as a keepalive but
    /// renews nothing, since its source could be spoofed (RFC 7675 §5.1 wants consent proved).
    /// Such peers still renew consent with their authenticated SRTP and SRTCP.
    mutating func keepalive(_ indication: STUNMessage, from source: TransportAddress, now: MediaTime) -> ICELiteAction {
        guard source == nominatedAddress, let username = indication.username,
              username.elementsEqual(expectedUsername), indication.hasValidMessageIntegrity(key: localKey)
        else { return .keepalive(renewedConsent: false) }
        consent.refresh(at: now)
        return .keepalive(renewedConsent: true)
    }

    /// Answers a valid check. USE-CANDIDATE selects `source` (the latest nomination wins, which
    /// follows a browser that moves to a new network path). A check from the selected address
    /// renews consent.
    mutating func accept(_ request: STUNMessage, from source: TransportAddress, now: MediaTime) -> ICELiteAction {
        let response = successResponse(to: request, from: source)
        if request.useCandidate { nominatedAddress = source }
        if source == nominatedAddress { consent.refresh(at: now) }
        return request.useCandidate
            ? .respondAndNominate(bytes: response, to: source)
            : .respond(bytes: response, to: source)
    }
}
