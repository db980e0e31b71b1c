import ChorusCore
import ICELite
import RTCP

extension PeerTransport {
    /// Says goodbye when the server ends the call: an RTCP BYE (RFC 3550 §6.6) for `sources`,
    /// the streams we send to this peer, in a compound led by a report and SDES CNAME (§6.1),
    /// then DTLS close_notify. Browsers act on the close_notify at once (their
    /// `RTCDtlsTransport` turns `closed`); without it they only notice when consent expires,
    /// ~30 s later. After this, nothing more is sent. Idempotent.
    public func close(sources: [SSRC], now: MediaTime, transmits: inout [Transmit]) {
        guard !isClosed else { return }
        if isConnected {
            var compound = makeReport(now: now)
            RTCPReporting.appendGoodbyes(for: sources, to: &compound)
            _ = sendRTCP(compound, transmits: &transmits)
        }
        let closing = dtls.close()
        dtlsDeadline = dtls.nextDeadline
        if let destination { for datagram in closing.datagrams { transmits.append((datagram, destination)) } }
        isClosed = true
        isConnected = false
        srtp = nil
    }

    /// ICE restart (RFC 8445 §9): a new generation with new credentials on both sides. DTLS
    /// and SRTP are kept, and media keeps flowing on the current path until the peer nominates
    /// one of the new generation; if it does not within the consent timeout, the call ends as
    /// a join that never completed would.
    public func restartICE(local: ICECredentials, remote: ICECredentials, now: MediaTime) {
        ice = ICELiteAgent(local: local, remote: remote, consentTimeoutNanoseconds: configuration.consentTimeoutNanoseconds)
        iceStartedAt = now
        nominatedOnce = false
    }

    /// The credentials of the current ICE generation.
    public var localICE: ICECredentials { ice.local }
    public var remoteICE: ICECredentials { ice.remote }

    /// Authenticated media from the selected address is proof that the peer is alive and still
    /// wants this path, as good as a consent check: some stacks (libnice, GStreamer's
    /// `webrtcbin`) keep a path alive with media and Binding indications and send no checks
    /// after connecting. Only packets that passed SRTP authentication call this, so no
    /// stranger can keep a call alive by spoofing its address.
    func mediaArrived(from source: TransportAddress, now: MediaTime) {
        ice.refreshConsent(from: source, now: now)
        heard(from: source, now: now, media: true)
    }
}
