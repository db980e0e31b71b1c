import CSRTP
import Foundation

/// `SRTPTransform` over libsrtp2: two sessions, one outbound (any SSRC we send, local key) and
/// one inbound (any SSRC the peer sends, remote key), replay protection on (window 1024), and
/// repeated transmission allowed outbound so NACK retransmissions of a cached packet work.
/// One instance per connection, used by one thread of control at a time: not `Sendable`.
public final class LibSRTPTransform: SRTPTransform {
    private var outbound: srtp_t?
    private var inbound: srtp_t?

    /// Fails only when libsrtp2 cannot build a session (e.g. a key of the wrong size).
    public init(_ keys: SRTPKeyingMaterial) throws(SRTPError) {
        LibSRTPTransform.initializeLibrary()
        outbound = try Self.session(keys.profile, key: keys.local, type: ssrc_any_outbound)
        inbound = try Self.session(keys.profile, key: keys.remote, type: ssrc_any_inbound)
    }

    deinit {
        if let outbound { srtp_dealloc(outbound) }
        if let inbound { srtp_dealloc(inbound) }
    }

    private static let initialized: Bool = {
        srtp_init() == srtp_err_status_ok
    }()

    static func initializeLibrary() {
        precondition(initialized, "libsrtp2 failed to initialize")
    }

    private static func session(_ profile: SRTPProtectionProfile, key: [UInt8], type: srtp_ssrc_type_t)
        throws(SRTPError) -> srtp_t
    {
        guard key.count == profile.keyLength + profile.saltLength else { throw .malformed }
        var policy = srtp_policy_t()
        switch profile {
        case .aeadAES128GCM:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        case .aes128CMHMACSHA1_80:
            chorus_srtp_policy_aes_cm_128_hmac_sha1_80(&policy.rtp)
            chorus_srtp_policy_aes_cm_128_hmac_sha1_80(&policy.rtcp)
        }
        policy.ssrc.type = type
        policy.window_size = 1024
        policy.allow_repeat_tx = 1
        var session: srtp_t?
        var keyCopy = key
        let status = keyCopy.withUnsafeMutableBufferPointer { buffer -> srtp_err_status_t in
            policy.key = buffer.baseAddress
            return srtp_create(&session, &policy)
        }
        guard status == srtp_err_status_ok, let session else { throw .failed(code: Int32(status.rawValue)) }
        return session
    }

    public func protectRTP(_ packet: inout [UInt8]) throws(SRTPError) {
        try Self.apply(&packet, session: outbound, grows: true, minimum: 12, srtp_protect)
    }

    public func unprotectRTP(_ packet: inout [UInt8]) throws(SRTPError) {
        try Self.apply(&packet, session: inbound, grows: false, minimum: 12, srtp_unprotect)
    }

    public func protectRTCP(_ packet: inout [UInt8]) throws(SRTPError) {
        try Self.apply(&packet, session: outbound, grows: true, minimum: 8, srtp_protect_rtcp)
    }

    public func unprotectRTCP(_ packet: inout [UInt8]) throws(SRTPError) {
        try Self.apply(&packet, session: inbound, grows: false, minimum: 8, srtp_unprotect_rtcp)
    }

    private typealias Operation = (srtp_t?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>?) -> srtp_err_status_t

    /// Runs one libsrtp2 operation in place. Protecting writes up to SRTP_MAX_TRAILER_LEN bytes
    /// past the packet, so the buffer is grown first and trimmed to the reported length after.
    private static func apply(_ packet: inout [UInt8], session: srtp_t?, grows: Bool, minimum: Int,
                              _ operation: Operation) throws(SRTPError)
    {
        // 12 bytes is the smallest RTP header, 8 the smallest RTCP packet.
        guard packet.count >= minimum, packet.count <= 65_535 else { throw .malformed }
        var length = Int32(packet.count)
        if grows { packet.append(contentsOf: repeatElement(0, count: Int(chorus_srtp_max_trailer_len()))) }
        let status = packet.withUnsafeMutableBytes { operation(session, $0.baseAddress, &length) }
        guard status == srtp_err_status_ok else {
            if grows { packet.removeLast(Int(chorus_srtp_max_trailer_len())) }
            switch status {
            case srtp_err_status_auth_fail: throw .authenticationFailed
            case srtp_err_status_replay_fail, srtp_err_status_replay_old: throw .replayed
            case srtp_err_status_bad_param, srtp_err_status_parse_err: throw .malformed
            default: throw .failed(code: Int32(status.rawValue))
            }
        }
        packet.removeLast(packet.count - Int(length))
    }
}
