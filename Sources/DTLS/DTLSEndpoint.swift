import ChorusCore
import COpenSSL
import SRTP

/// Which side of the handshake this endpoint plays (from SDP `a=setup`: an `actpass` offer
/// makes the server passive, i.e. the DTLS server).
public enum DTLSRole: Sendable {
    case client, server
}

/// What a DTLS step produced: datagrams to send (one record flight datagram each) and, at most
/// once, the outcome of the handshake.
public struct DTLSOutput: Sendable {
    public var datagrams: [[UInt8]] = []
    public var event: DTLSEvent?
    /// The datagram received was dropped unread: its records did not frame (`DTLSRecordLayer`).
    public var malformed: DTLSRecordError?
}

public enum DTLSEvent: Sendable, Equatable {
    /// Handshake done, peer certificate matched the SDP fingerprint: SRTP keys.
    case connected(SRTPKeyingMaterial)
    case failed(DTLSError)
    /// The peer sent close_notify.
    case closed
}

/// One DTLS 1.2 association (RFC 6347) for DTLS-SRTP (RFC 5764), sans-IO: datagrams in,
/// datagrams and events out, time passed in. OpenSSL runs over a `DatagramBIO`, so the engine
/// never touches a socket. Owned and driven by one participant's transport on its room's queue.
///
/// Retransmissions: the owner calls `handleTimeout(now:)` once `nextDeadline` has passed.
/// OpenSSL keeps its own view of elapsed time and decides whether to resend; the room's clock
/// only decides when to ask.
///
/// Not `Sendable`: its owner (a participant's transport) confines it to one thread of control.
public final class DTLSEndpoint {
    public enum State: Sendable, Equatable { case handshaking, connected, failed, closed }

    /// First retransmission timeout; doubles per retry up to 4 s (RFC 6347 §4.2.4.1 allows
    /// implementations to start lower than 1 s).
    static let initialRetransmitMicroseconds: UInt32 = 200_000

    public let role: DTLSRole
    public private(set) var state: State = .handshaking
    public private(set) var nextDeadline: MediaTime?
    private let ssl: OpaquePointer
    private let queues: DatagramQueues
    private let context: DTLSContext
    private let remoteFingerprints: [DTLSFingerprint]

    public init(context: DTLSContext, role: DTLSRole, remoteFingerprints: [DTLSFingerprint], mtu: Int = 1200)
        throws(DTLSError)
    {
        guard let ssl = SSL_new(context.context) else { throw .openSSL("SSL_new") }
        let queues = DatagramQueues(mtu: mtu)
        guard let bio = DatagramBIO.make(queues) else {
            SSL_free(ssl)
            throw .openSSL("BIO_new")
        }
        SSL_set_bio(ssl, bio, bio)
        chorus_ssl_set_mtu(ssl, mtu)
        // OpenSSL's first retransmission waits 1 s; a lost flight on join should cost less.
        DTLS_set_timer_cb(ssl) { _, previous in
            previous == 0 ? DTLSEndpoint.initialRetransmitMicroseconds : min(previous * 2, 4_000_000)
        }
        switch role {
        case .client: SSL_set_connect_state(ssl)
        case .server: SSL_set_accept_state(ssl)
        }
        self.ssl = ssl
        self.queues = queues
        self.context = context
        self.role = role
        self.remoteFingerprints = remoteFingerprints
    }

    deinit {
        SSL_free(ssl)
    }

    /// Starts the handshake: the client's first flight (ClientHello); nothing for a server.
    public func start(now: MediaTime) -> DTLSOutput {
        guard role == .client else { return DTLSOutput() }
        return step(now: now)
    }

    /// Feeds one datagram received from the peer (already classified as DTLS, RFC 7983).
    public func handle(_ datagram: [UInt8], now: MediaTime) -> DTLSOutput {
        guard state == .handshaking || state == .connected, !datagram.isEmpty else { return DTLSOutput() }
        do {
            _ = try DTLSRecordLayer(parsing: datagram)
        } catch {
            return DTLSOutput(malformed: error)
        }
        queues.incoming.append(datagram)
        return step(now: now)
    }

    /// Ends the association from our side: a close_notify alert (RFC 5246 §7.2.1, which DTLS
    /// keeps) once the handshake is done, so that the peer learns at once that the call is over
    /// instead of waiting for its consent to expire. Answers a peer's own close_notify too. In
    /// any other state there is no association to close, and nothing is sent. Idempotent.
    public func close() -> DTLSOutput {
        guard state == .connected || (state == .closed && !sentCloseNotify) else {
            if state == .handshaking { state = .closed }
            nextDeadline = nil
            return DTLSOutput()
        }
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        sentCloseNotify = true
        state = .closed
        nextDeadline = nil
        return DTLSOutput(datagrams: drain())
    }

    private var sentCloseNotify = false

    /// Retransmits the last flight if OpenSSL's timer has expired.
    public func handleTimeout(now: MediaTime) -> DTLSOutput {
        guard state == .handshaking, let deadline = nextDeadline, now >= deadline else { return DTLSOutput() }
        ERR_clear_error()
        if chorus_dtls_handle_timeout(ssl) < 0 {
            state = .failed
            nextDeadline = nil
            return DTLSOutput(datagrams: drain(), event: .failed(.handshakeFailed("retransmission limit")))
        }
        updateDeadline(now: now)
        return DTLSOutput(datagrams: drain())
    }

    private func step(now: MediaTime) -> DTLSOutput {
        ERR_clear_error()
        var output = DTLSOutput()
        switch state {
        case .handshaking:
            let result = SSL_do_handshake(ssl)
            if result == 1 {
                output.event = finishHandshake()
            } else if SSL_get_error(ssl, result) != SSL_ERROR_WANT_READ {
                state = .failed
                output.event = .failed(.handshakeFailed(Self.lastError()))
            }
        case .connected:
            output.event = readApplicationRecords()
        case .failed, .closed:
            break
        }
        updateDeadline(now: now)
        output.datagrams = drain()
        return output
    }

    /// Checks the peer certificate against SDP and exports the SRTP keys.
    private func finishHandshake() -> DTLSEvent {
        guard let peer = SSL_get1_peer_certificate(ssl) else {
            state = .failed
            return .failed(.handshakeFailed("no peer certificate"))
        }
        defer { X509_free(peer) }
        let matches = remoteFingerprints.contains { expected in
            DTLSCertificate.digest(of: peer, algorithm: expected.algorithm) == expected.digest
        }
        guard matches else {
            state = .failed
            return .failed(.fingerprintMismatch)
        }
        guard let selected = SSL_get_selected_srtp_profile(ssl),
              let profile = SRTPProtectionProfile(rawValue: UInt16(truncatingIfNeeded: selected.pointee.id))
        else {
            state = .failed
            return .failed(.noSRTPProfile)
        }
        let length = 2 * (profile.keyLength + profile.saltLength)
        var exported = [UInt8](repeating: 0, count: length)
        let label = "EXTRACTOR-dtls_srtp"
        let ok = SSL_export_keying_material(ssl, &exported, length, label, label.utf8.count, nil, 0, 0)
        guard ok == 1, let keys = SRTPKeyingMaterial(profile: profile, exported: exported, isClient: role == .client)
        else {
            state = .failed
            return .failed(.handshakeFailed("keying material export"))
        }
        state = .connected
        return .connected(keys)
    }

    /// After the handshake the peer may still send records: a retransmitted Finished (OpenSSL
    /// answers it), or close_notify. Application data is not used by WebRTC media and is dropped.
    private func readApplicationRecords() -> DTLSEvent? {
        var buffer = [UInt8](repeating: 0, count: 2048)
        while true {
            let n = SSL_read(ssl, &buffer, Int32(buffer.count))
            if n > 0 { continue }
            let error = SSL_get_error(ssl, n)
            if error == SSL_ERROR_ZERO_RETURN {
                state = .closed
                return .closed
            }
            return nil
        }
    }

    private func updateDeadline(now: MediaTime) {
        var tv = timeval()
        guard state == .handshaking, chorus_dtls_get_timeout(ssl, &tv) == 1 else {
            nextDeadline = nil
            return
        }
        let nanoseconds = UInt64(max(0, tv.tv_sec)) * 1_000_000_000 + UInt64(max(0, tv.tv_usec)) * 1_000
        nextDeadline = now.adding(nanoseconds: nanoseconds)
    }

    private func drain() -> [[UInt8]] {
        let datagrams = queues.outgoing
        queues.outgoing.removeAll(keepingCapacity: true)
        return datagrams
    }

    static func lastError() -> String {
        let code = ERR_get_error()
        guard code != 0 else { return "handshake failed" }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
