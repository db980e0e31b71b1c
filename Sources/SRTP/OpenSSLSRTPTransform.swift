import ChorusCore
/// `srtp_err_status_t` values of libsrtp2 that `LibSRTPTransform` reports as `.failed(code:)`,
/// reused so that both transforms fail with identical `SRTPError` values.
enum LibSRTPStatus {
    static let initFail: Int32 = 5
    static let cipherFail: Int32 = 8
    static let cantCheck: Int32 = 14
    static let keyExpired: Int32 = 15
}

/// `SRTPTransform` over OpenSSL EVP (libcrypto): RFC 3711 SRTP/SRTCP with
/// AES_CM_128_HMAC_SHA1_80 and RFC 7714 AEAD_AES_128_GCM, for any number of SSRCs per direction.
///
/// It exists because Debian's libsrtp2 is built on NSS and costs 10–29 µs per packet once
/// hundreds of sessions are live, where OpenSSL's AES stays near 1 µs. It is a drop-in for
/// `LibSRTPTransform`, packet for packet: the same keys give byte-identical output, and every
/// protect or unprotect call succeeds in both or fails in both with the same `SRTPError`.
/// To get there it follows libsrtp2's order of checks (header, replay, length, tag), its replay
/// windows (1024 RTP indices as configured there, 128 SRTCP indices), its "repeat transmission
/// allowed" sender policy (a NACK retransmission of a cached packet protects again to the same
/// bytes) and a few of its quirks, each marked where it is mirrored.
///
/// One instance per participant connection, used only on its room's queue (not thread-safe).
/// This code allocates nothing per packet except growing the packet by its tag (measured: 0
/// allocations per AEAD packet; OpenSSL 3.0 itself mallocs twice per HMAC restart, so an AES-CM
/// packet costs 2). Peer input never traps: short, malformed or forged packets throw.
public final class OpenSSLSRTPTransform: SRTPTransform {
    private let profile: SRTPProtectionProfile
    private let outbound: SRTPPacketCipher
    private let inbound: SRTPPacketCipher
    /// SSRCs we send: our ROC per SSRC and SRTCP index.
    private var sent = SRTPStreamTable()
    /// SSRCs the peer sends: ROC estimation and replay lists; created only once a packet from
    /// the SSRC has authenticated, so forged SSRCs cost no memory.
    private var received = SRTPStreamTable()

    /// NSS-backed libsrtp2 refuses GCM additional data beyond 2048 bytes (its `MAX_AD_SIZE`,
    /// reported as a cipher failure); mirrored so both transforms reject the same packets.
    private static let maximumAAD = 2048

    /// Fails only on keys of the wrong size for the profile (`.malformed`, as `LibSRTPTransform`)
    /// or if OpenSSL cannot set up its contexts.
    public init(_ keys: SRTPKeyingMaterial) throws(SRTPError) {
        let expected = keys.profile.keyLength + keys.profile.saltLength
        guard keys.local.count == expected, keys.remote.count == expected else { throw .malformed }
        profile = keys.profile
        outbound = try SRTPPacketCipher(SRTPSessionKeys(profile: keys.profile, master: keys.local), seals: true)
        inbound = try SRTPPacketCipher(SRTPSessionKeys(profile: keys.profile, master: keys.remote), seals: false)
    }

    /// Builds a transform from explicit session keys (no key derivation): for known-answer tests
    /// stated in session keys, such as RFC 7714 §16–17.
    init(sessionKeys local: SRTPSessionKeys, remote: SRTPSessionKeys) throws(SRTPError) {
        guard local.profile == remote.profile else { throw .malformed }
        profile = local.profile
        outbound = try SRTPPacketCipher(local, seals: true)
        inbound = try SRTPPacketCipher(remote, seals: false)
    }

    /// Number of SSRCs with send state and with receive state (for tests and diagnostics).
    var streamCounts: (sent: Int, received: Int) { (sent.count, received.count) }

    /// Starts the SRTCP send index of an SSRC after `index` (tests: RFC 7714 §17 uses 0x5d4).
    func setLastSRTCPIndex(_ index: UInt32, ssrc: UInt32) {
        sent.streams[sent.insert(ssrc)].rtcpSent = index
    }

    private var tagLength: Int { SRTPPacketCipher.tagLength(profile) }

    /// Room for a tag and an SRTCP word, appended as a contiguous slice: a memcpy, where
    /// `repeatElement` took the generic element-by-element path (200 instructions a packet).
    private static let zeros = [UInt8](repeating: 0, count: 20)

    // MARK: RTP

    public func protectRTP(_ packet: inout [UInt8]) throws(SRTPError) {
        guard packet.count >= 12, packet.count <= 65_535 else { throw .malformed }
        let headerLength = try Self.rtpHeaderLength(packet)
        let ssrc = packet.uint32(at: 8)
        let slot = sent.insert(ssrc)
        let (index, delta) = sent.streams[slot].rtp.estimate(packet.uint16(at: 2))
        switch sent.streams[slot].rtp.check(delta) {
        case .fresh: sent.streams[slot].rtp.add(delta)
        case .seen: break  // a retransmission of an index already sent: same keystream, same bytes
        case .tooOld: throw .replayed
        }
        // libsrtp2 has already recorded the index when it refuses the AAD: so do we.
        if profile == .aeadAES128GCM, headerLength > Self.maximumAAD { throw .failed(code: LibSRTPStatus.cipherFail) }
        let length = packet.count
        packet.append(contentsOf: Self.zeros.prefix(tagLength))
        let ok = packet.withUnsafeMutableBytes {
            outbound.sealRTP($0.baseAddress!, length: length, headerLength: headerLength, ssrc: ssrc, index: index)
        }
        guard ok else {
            packet.removeLast(tagLength)
            throw .failed(code: LibSRTPStatus.cipherFail)
        }
    }

    /// Receive state is kept for at most this many SSRCs. A WebRTC peer uses a handful; the
    /// bound keeps an authenticated but hostile peer from growing the table without limit by
    /// cycling SSRCs (libsrtp2 has no such bound; this is the one place the two differ).
    static let maximumReceivedSSRCs = 256

    private func refuseBeyondMaximumSSRCs(known: Bool) throws(SRTPError) {
        if !known, received.count >= Self.maximumReceivedSSRCs { throw .failed(code: LibSRTPStatus.initFail) }
    }

    public func unprotectRTP(_ packet: inout [UInt8]) throws(SRTPError) {
        guard packet.count >= 12, packet.count <= 65_535 else { throw .malformed }
        let headerLength = try Self.rtpHeaderLength(packet)
        let ssrc = packet.uint32(at: 8)
        let sequenceNumber = packet.uint16(at: 2)
        let slot = received.slot(for: ssrc)
        try refuseBeyondMaximumSSRCs(known: slot != nil)
        let index: UInt64, delta: Int
        if let slot {
            (index, delta) = received.streams[slot].rtp.estimate(sequenceNumber)
            guard received.streams[slot].rtp.check(delta) == .fresh else { throw .replayed }
        } else {
            // A new SSRC starts with ROC 0 at its first sequence number (libsrtp2's template).
            (index, delta) = (UInt64(sequenceNumber), Int(sequenceNumber))
        }
        let length = packet.count
        if profile == .aeadAES128GCM {
            // libsrtp2 computes length − tag in unsigned arithmetic: a packet shorter than the tag
            // wraps past its "too short" test and fails as a cipher failure instead.
            if length < tagLength { throw .failed(code: LibSRTPStatus.cipherFail) }
            guard headerLength <= length - tagLength else { throw .malformed }
            if headerLength > Self.maximumAAD { throw .failed(code: LibSRTPStatus.cipherFail) }
        } else {
            guard headerLength <= length - tagLength else { throw .malformed }
        }
        let result = packet.withUnsafeMutableBytes {
            inbound.openRTP($0.baseAddress!, length: length, headerLength: headerLength, ssrc: ssrc, index: index)
        }
        try Self.check(result)
        received.streams[slot ?? received.insert(ssrc)].rtp.add(delta)
        packet.removeLast(tagLength)
    }

    // MARK: RTCP

    public func protectRTCP(_ packet: inout [UInt8]) throws(SRTPError) {
        guard packet.count >= 8, packet.count <= 65_535 else { throw .malformed }
        let ssrc = packet.uint32(at: 4)
        let slot = sent.insert(ssrc)
        // RFC 3711 §3.4: the index is 31 bits and must not wrap; libsrtp2 stops at 2^31 − 1.
        guard sent.streams[slot].rtcpSent < 0x7FFF_FFFF else { throw .failed(code: LibSRTPStatus.keyExpired) }
        sent.streams[slot].rtcpSent += 1
        let index = sent.streams[slot].rtcpSent
        let length = packet.count
        packet.append(contentsOf: Self.zeros.prefix(tagLength + 4))
        let ok = packet.withUnsafeMutableBytes {
            outbound.sealRTCP($0.baseAddress!, length: length, ssrc: ssrc, index: index)
        }
        guard ok else {
            packet.removeLast(tagLength + 4)
            throw .failed(code: LibSRTPStatus.cipherFail)
        }
    }

    public func unprotectRTCP(_ packet: inout [UInt8]) throws(SRTPError) {
        // Header (8), E‖index word (4) and tag, in libsrtp2's two steps (same error either way).
        guard packet.count >= 12, packet.count <= 65_535 else { throw .malformed }
        let length = packet.count
        guard length >= 8 + tagLength + 4 else { throw .malformed }
        let ssrc = packet.uint32(at: 4)
        let word = profile == .aeadAES128GCM ? packet.uint32(at: length - 4)
                                             : packet.uint32(at: length - tagLength - 4)
        let encrypted = word & 0x8000_0000 != 0
        let index = word & 0x7FFF_FFFF
        // Chorus's AES-CM policy always encrypts SRTCP, and libsrtp2 refuses a packet that says
        // otherwise before anything else. AEAD accepts both (RFC 7714 §9.3).
        if profile == .aes128CMHMACSHA1_80, !encrypted { throw .failed(code: LibSRTPStatus.cantCheck) }
        let slot = received.slot(for: ssrc)
        try refuseBeyondMaximumSSRCs(known: slot != nil)
        if let slot, received.streams[slot].rtcp.check(index) != .fresh { throw .replayed }
        // Unencrypted AEAD SRTCP is AAD up to the tag, then the index word. (When only the word
        // crosses the limit, libsrtp2 also leaves the body in its AAD buffer and fails the next
        // packet too; that bug is not mirrored.)
        if profile == .aeadAES128GCM, !encrypted, length - 20 + 4 > Self.maximumAAD {
            throw .failed(code: LibSRTPStatus.cipherFail)
        }
        let result = packet.withUnsafeMutableBytes {
            inbound.openRTCP($0.baseAddress!, length: length, ssrc: ssrc, index: index, encrypted: encrypted)
        }
        try Self.check(result)
        received.streams[slot ?? received.insert(ssrc)].rtcp.add(index)
        packet.removeLast(tagLength + 4)
    }

    // MARK: Parsing

    private static func check(_ result: SRTPOpenResult) throws(SRTPError) {
        switch result {
        case .opened: return
        case .authenticationFailed: throw .authenticationFailed
        case .cipherFailed: throw .failed(code: LibSRTPStatus.cipherFail)
        }
    }

    /// The RTP header length up to the payload: 12 bytes, the CSRCs, and the header extension
    /// when X is set (RFC 3550 §5.1, §5.3.1), validated against the packet length as libsrtp2's
    /// `srtp_validate_rtp_header` does. The caller has checked `packet.count >= 12`.
    static func rtpHeaderLength(_ packet: [UInt8]) throws(SRTPError) -> Int {
        var length = 12 + 4 * Int(packet[0] & 0x0F)
        let hasExtension = packet[0] & 0x10 != 0
        if hasExtension { length += 4 }
        guard packet.count >= length else { throw .malformed }
        if hasExtension {
            length += 4 * Int(packet.uint16(at: length - 2))
            guard packet.count >= length else { throw .malformed }
        }
        return length
    }

}
