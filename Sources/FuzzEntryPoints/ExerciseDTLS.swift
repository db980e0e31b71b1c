import ChorusCore
import DTLS

/// One server identity and one client identity per process: generating a P-256 key per input
/// would cost more than the handshake.
enum FuzzDTLS {
    static let serverContext: DTLSContext = {
        do { return try DTLSContext(certificate: DTLSCertificate(commonName: "chorus-fuzz-server")) } catch {
            fatalError("DTLS server context: \(error)")
        }
    }()
    static let clientContext: DTLSContext = {
        do { return try DTLSContext(certificate: DTLSCertificate(commonName: "chorus-fuzz-client")) } catch {
            fatalError("DTLS client context: \(error)")
        }
    }()
    static var serverFingerprint: DTLSFingerprint {
        DTLSFingerprint(algorithm: .sha256, digest: serverContext.certificate.fingerprint)
    }
    static var clientFingerprint: DTLSFingerprint {
        DTLSFingerprint(algorithm: .sha256, digest: clientContext.certificate.fingerprint)
    }
}

/// Datagrams from a peer into a `DTLSEndpoint`: our record layer (`DTLSRecordLayer`, whose
/// checks libFuzzer can see) frames each datagram, then OpenSSL parses the records and handshake
/// messages (fragmented, reordered, repeated). The input is a `FuzzInput`; the mode byte's bits:
/// - 0: the endpoint's role (0: server, as for an `actpass` offer; 1: client, which first sends
///   its ClientHello);
/// - 1: retransmission timers fire between datagrams;
/// - 2: structure-aware: each datagram becomes one record that frames (`FuzzDTLSRecords`), so
///   OpenSSL's handshake code gets well-formed fragments around fuzz bodies;
/// - 3: a server first receives a real ClientHello, so what follows meets its later states.
public func exerciseDTLS(_ bytes: [UInt8]) {
    let input = FuzzInput(bytes)
    let role: DTLSRole = input.mode & 1 == 0 ? .server : .client
    let endpoint: DTLSEndpoint
    do {
        endpoint = try DTLSEndpoint(context: role == .server ? FuzzDTLS.serverContext : FuzzDTLS.clientContext,
                                    role: role,
                                    remoteFingerprints: [role == .server ? FuzzDTLS.clientFingerprint
                                        : FuzzDTLS.serverFingerprint])
    } catch {
        fatalError("DTLSEndpoint: \(error)")
    }
    var now = FuzzICE.start
    check(endpoint.start(now: now), endpoint)
    if input.mode & 8 != 0, role == .server {
        check(endpoint.handle(FuzzDTLSRecords.clientHello, now: now), endpoint)
    }
    for (index, raw) in input.datagrams.enumerated() {
        now = now.adding(milliseconds: 10)
        let datagram = input.mode & 4 != 0 ? FuzzDTLSRecords.record(raw, sequence: UInt64(index + 1)) : raw
        if input.mode & 4 != 0 {
            fuzzRequire((try? DTLSRecordLayer(parsing: datagram)) != nil, "a structured record does not frame")
        }
        check(endpoint.handle(datagram, now: now), endpoint)
        if input.mode & 2 != 0, let deadline = endpoint.nextDeadline {
            check(endpoint.handleTimeout(now: deadline), endpoint)
        }
    }
    check(endpoint.handleTimeout(now: now.adding(milliseconds: 60_000)), endpoint)
}

/// What an endpoint emits stays within its contract: no empty datagrams, nothing larger than the
/// MTU allows (plus record overhead), and a failed or closed endpoint is silent.
private func check(_ output: DTLSOutput, _ endpoint: DTLSEndpoint) {
    for datagram in output.datagrams {
        fuzzRequire(!datagram.isEmpty, "DTLS emitted an empty datagram")
        fuzzRequire(datagram.count <= 1500, "DTLS emitted a \(datagram.count)-byte datagram with a 1200-byte MTU")
    }
    if output.malformed != nil {
        fuzzRequire(output.datagrams.isEmpty && output.event == nil, "a dropped datagram produced output")
    }
    switch output.event {
    case .connected?: fuzzRequire(endpoint.state == .connected, "connected event in state \(endpoint.state)")
    case .failed?: fuzzRequire(endpoint.state == .failed, "failed event in state \(endpoint.state)")
    case .closed?: fuzzRequire(endpoint.state == .closed, "closed event in state \(endpoint.state)")
    case nil: break
    }
    consume((endpoint.state, endpoint.nextDeadline))
}
