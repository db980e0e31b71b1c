/// Why a packet could not be protected or unprotected. Unprotect failures come from the
/// network and are dropped and counted, never fatal.
public enum SRTPError: Error, Equatable, Sendable {
    case authenticationFailed
    case replayed
    case malformed
    case failed(code: Int32)

    /// A short label for metrics.
    public var reason: String {
        switch self {
        case .authenticationFailed: return "srtp_auth"
        case .replayed: return "srtp_replay"
        case .malformed: return "srtp_malformed"
        case .failed: return "srtp_error"
        }
    }
}

/// The seam between the transport and an SRTP implementation: protect outgoing and unprotect
/// incoming RTP and RTCP in place. One instance per participant connection, used only on its
/// room's queue. The media path uses `OpenSSLSRTPTransform` (RFC 3711/7714 over OpenSSL EVP);
/// `LibSRTPTransform` (libsrtp2) is the reference it is tested against, kept off the media path
/// because Debian's libsrtp2 runs on NSS and slows down with the number of live sessions.
public protocol SRTPTransform: AnyObject {
    /// Encrypts and authenticates an RTP packet; the packet grows by the auth tag.
    func protectRTP(_ packet: inout [UInt8]) throws(SRTPError)
    /// Verifies and decrypts an SRTP packet in place (shrinks it to the RTP packet).
    func unprotectRTP(_ packet: inout [UInt8]) throws(SRTPError)
    func protectRTCP(_ packet: inout [UInt8]) throws(SRTPError)
    func unprotectRTCP(_ packet: inout [UInt8]) throws(SRTPError)
}
