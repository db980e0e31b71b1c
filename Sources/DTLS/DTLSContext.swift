import COpenSSL
import SRTP

/// An OpenSSL `SSL_CTX` configured for WebRTC: DTLS 1.2 only, our certificate, a peer
/// certificate required (any self-signed one: the fingerprint from SDP is checked after the
/// handshake), and the use_srtp extension (RFC 5764) offering the profiles in preference order.
/// Shared by every connection; `SSL_CTX` is safe to use from several threads once configured.
///
/// `@unchecked Sendable`: the `SSL_CTX` is configured in `init` only; after that OpenSSL locks its own shared state.
public final class DTLSContext: @unchecked Sendable {
    let context: OpaquePointer
    public let certificate: DTLSCertificate
    public let profiles: [SRTPProtectionProfile]

    public init(certificate: DTLSCertificate,
                profiles: [SRTPProtectionProfile] = [.aeadAES128GCM, .aes128CMHMACSHA1_80]) throws(DTLSError) {
        guard let context = SSL_CTX_new(DTLS_method()) else { throw .openSSL("SSL_CTX_new") }
        self.context = context
        self.certificate = certificate
        self.profiles = profiles
        guard SSL_CTX_use_certificate(context, certificate.certificate) == 1,
              SSL_CTX_use_PrivateKey(context, certificate.key) == 1,
              SSL_CTX_check_private_key(context) == 1
        else { throw .openSSL("certificate setup") }
        guard chorus_ssl_ctx_set_min_dtls12(context) == 1 else { throw .openSSL("DTLS 1.2 minimum") }
        // Note the inverted convention: 0 means success here.
        let names = profiles.map(\.openSSLName).joined(separator: ":")
        guard SSL_CTX_set_tlsext_use_srtp(context, names) == 0 else { throw .openSSL("use_srtp") }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT) { _, _ in 1 }
        _ = chorus_ssl_ctx_set_ecdh_auto(context)
    }

    deinit {
        SSL_CTX_free(context)
    }
}
