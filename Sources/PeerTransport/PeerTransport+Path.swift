import ChorusCore
import ICELite
import STUN

/// NAT rebinding: the peer's packets start arriving from a new address (its NAT gave it a new
/// port, or its path changed) while it keeps the same ICE candidates, so it nominates nothing
/// new. A lite agent switches only on nomination (RFC 8445 §7.3.1.5), which would leave our
/// media going to the dead address for good. So:
/// 1. SRTP/SRTCP from an unvalidated address reaches the transport by its sender SSRC; when it
///    authenticates, the transport sends that address a Binding request of its own (signed
///    with the peer's password, ICE-CONTROLLED) — a new address is never adopted without a
///    MESSAGE-INTEGRITY-checked exchange;
/// 2. the peer's success response validates the address;
/// 3. once media arrives from it while the selected address has been silent for
///    `pathSilenceNanoseconds`, media moves there, and the old address stops counting.
/// Only media moves the path: a peer that keeps backup pairs alive with checks, or an ICE-TCP
/// pair beside UDP, never triggers it, since it sends media on one path.
extension PeerTransport {
    /// How long the selected address must be silent before a validated new one that carries
    /// media takes over: well above a packet interval, well below a noticeable gap.
    static let pathSilenceNanoseconds: UInt64 = 300_000_000
    /// Addresses probed at once, and how often one is probed again while it sends media.
    static let maximumProbes = 4
    static let probeIntervalNanoseconds: UInt64 = 200_000_000

    /// Something authenticated came from `source` at `now`: a valid check (`media` false), or
    /// SRTP/SRTCP.
    func heard(from source: TransportAddress, now: MediaTime, media: Bool) {
        if source == destination {
            destinationHeardAt = now
            pendingPath = nil
        } else if media, nominatedOnce, validated.contains(source) {
            pendingPath = (source, now)
        }
    }

    /// SRTP or SRTCP from `source`, which no check validated. If it authenticates, the peer is
    /// there (or its packet was replayed from there): check the address, and say so to the
    /// owner so that the answer is routed back. The packet itself is not used.
    func probeIfAuthentic(_ datagram: [UInt8], rtcp: Bool, from source: TransportAddress, now: MediaTime,
                          transmits: inout [Transmit]) -> Result<TransportEvent?, TransportDropReason>
    {
        guard nominatedOnce, let srtp else { return drop(.notValidated) }
        var packet = datagram
        do {
            if rtcp { try srtp.unprotectRTCP(&packet) } else { try srtp.unprotectRTP(&packet) }
        } catch {
            return drop(.notValidated)
        }
        if let probe = probes[source], now.nanoseconds(since: probe.sentAt) < Self.probeIntervalNanoseconds {
            return drop(.notValidated)
        }
        guard probes[source] != nil || probes.count < Self.maximumProbes else { return drop(.notValidated) }
        let id = TransactionID.random()
        let isNew = probes[source] == nil
        probes[source] = (id, now)
        transmits.append((probeRole.bindingRequest(transactionID: id, useCandidate: false), source))
        counters.packetsDropped &+= 1
        return .success(isNew ? .probing(source) : nil)
    }

    /// A STUN response: the answer to one of our probes validates its address.
    func receiveProbeResponse(_ datagram: [UInt8], from source: TransportAddress)
        -> Result<TransportEvent?, TransportDropReason>
    {
        guard let probe = probes[source],
              case .success = probeRole.validateResponse(datagram, transactionID: probe.id)
        else { return drop(.iceRefused) }
        probes[source] = nil
        validated.insert(source)
        return .success(.addressValidated(source))
    }

    /// Our side of a check toward the peer: its credentials, ICE-CONTROLLED (we are lite).
    var probeRole: ICEClientRole {
        ICEClientRole(local: ice.local, remote: ice.remote, tieBreaker: rtcpRandom, isControlling: false)
    }

    /// When a pending path could take over, if one is pending.
    var pathSwitchDeadline: MediaTime? {
        guard pendingPath != nil else { return nil }
        return destinationHeardAt.adding(nanoseconds: Self.pathSilenceNanoseconds)
    }

    /// Moves media to the pending path when the selected one has gone silent and the pending
    /// one is alive; the old address is no longer valid. Called from `poll`.
    func switchPathIfDue(now: MediaTime) -> TransportEvent? {
        guard let pending = pendingPath, let old = destination,
              now.nanoseconds(since: destinationHeardAt) >= Self.pathSilenceNanoseconds
        else { return nil }
        pendingPath = nil
        guard now.nanoseconds(since: pending.heardAt) < Self.pathSilenceNanoseconds else { return nil }
        destination = pending.address
        destinationHeardAt = pending.heardAt
        validated.remove(old)
        ice.select(pending.address)
        counters.pathChanges &+= 1
        return .pathChanged(from: old, to: pending.address)
    }
}
