import ChorusCore
import ICELite
import STUN

/// The client's side of ICE (RFC 8445) and consent (RFC 7675): its checks toward the server's
/// candidate, their answers, the peer's own checks, and the ICE restart.
extension ClientTransport {
    /// Checks remembered at once: a check is superseded every 100 ms while unanswered, and an
    /// answer slower than that to an earlier one still proves the pair.
    static let maximumPendingChecks = 8

    /// A Binding request toward the server: with USE-CANDIDATE (a nomination, when we control)
    /// or without (a consent check). The owner sends it; its answer goes to `receive`. Used
    /// directly when the owner paces the checks itself (`configuration.checks` nil).
    public func connectivityCheck(useCandidate: Bool = true) -> Transmit {
        let id = TransactionID.random()
        pendingChecks.append(id)
        if pendingChecks.count > Self.maximumPendingChecks { pendingChecks.removeFirst() }
        return (ice.bindingRequest(transactionID: id, useCandidate: useCandidate), configuration.remote)
    }

    /// ICE restart (RFC 8445 §9): a new generation with new credentials on both sides. DTLS and
    /// SRTP stay, and media keeps flowing; checks of the new generation (with USE-CANDIDATE)
    /// start now, and consent runs on from the last answered check.
    public func restartICE(local: ICECredentials, remote: ICECredentials, now: MediaTime) {
        ice = ICEClientRole(local: local, remote: remote, tieBreaker: configuration.tieBreaker,
                            isControlling: configuration.isControlling)
        pendingChecks.removeAll()
        hasValidPair = false
        answeredPeerCheck = false
        if configuration.checks != nil, !consentExpired { nextCheckAt = now }
    }

    /// A STUN message from the server: a request or indication is the peer's own check (a
    /// full agent's, or a lite server's probe of a new address of ours), answered when it is
    /// authentic; a response may answer one of our checks.
    func receiveSTUN(_ datagram: [UInt8], now: MediaTime, transmits: inout [Transmit])
        -> Result<TransportEvent?, TransportDropReason>
    {
        counters.stunReceived &+= 1
        // The class's C1 bit is the first byte's lowest (RFC 8489 §5): set on responses only.
        guard let first = datagram.first, first & 0x01 != 0 else {
            guard let response = ice.respond(to: datagram, from: configuration.remote) else { return drop(.iceRefused) }
            transmits.append((response, configuration.remote))
            answeredPeerCheck = true
            return .success(nil)
        }
        guard let id = pendingTransaction(in: datagram) else { return drop(.iceRefused) }
        let outcome = ice.validateResponse(datagram, transactionID: id)
        lastCheckOutcome = outcome
        guard case .success = outcome else { return drop(.iceRefused) }
        pendingChecks.removeAll()
        consentGrantedAt = now
        if let schedule = configuration.checks { nextCheckAt = now.adding(nanoseconds: schedule.consentNanoseconds) }
        guard !hasValidPair else { return .success(nil) }
        hasValidPair = true
        startDTLSIfClient(now: now, transmits: &transmits)
        return .success(configuration.isControlling ? .nominated(configuration.remote)
            : .addressValidated(configuration.remote))
    }

    /// The pending check a response names (bytes 8..<20, RFC 8489 §5), if it names one.
    private func pendingTransaction(in datagram: [UInt8]) -> TransactionID? {
        guard datagram.count >= 20, let id = TransactionID(bytes: datagram[8..<20]) else { return nil }
        return pendingChecks.contains(id) ? id : nil
    }

    /// A DTLS client (the answer said `a=setup:passive`) speaks first, once a check succeeded.
    private func startDTLSIfClient(now: MediaTime, transmits: inout [Transmit]) {
        guard configuration.dtlsRole == .client, !dtlsStarted else { return }
        dtlsStarted = true
        for datagram in dtls.start(now: now).datagrams { transmits.append((datagram, configuration.remote)) }
        dtlsDeadline = dtls.nextDeadline
    }

    /// When consent runs out, with the transport pacing its own checks; nil otherwise.
    var consentDeadline: MediaTime? {
        guard let schedule = configuration.checks, !consentExpired else { return nil }
        return consentGrantedAt.adding(nanoseconds: schedule.consentTimeoutNanoseconds)
    }

    /// Consent lost (RFC 7675 §5.1): said once, and from then on nothing is sent.
    func checkConsent(now: MediaTime) -> TransportEvent? {
        guard let deadline = consentDeadline, now >= deadline else { return nil }
        consentExpired = true
        nextCheckAt = nil
        return .consentExpired
    }

    /// Our next check when it is due: USE-CANDIDATE until one of this generation is answered,
    /// then a plain consent check every few seconds.
    func sendCheckIfDue(now: MediaTime, transmits: inout [Transmit]) {
        guard let schedule = configuration.checks, let due = nextCheckAt, now >= due else { return }
        transmits.append(connectivityCheck(useCandidate: !hasValidPair))
        nextCheckAt = now.adding(nanoseconds: hasValidPair ? schedule.consentNanoseconds : schedule.retransmitNanoseconds)
    }
}
