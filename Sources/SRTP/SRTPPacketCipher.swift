import CAESGCM
import COpenSSL

/// Outcome of verifying and decrypting one packet.
enum SRTPOpenResult {
    case opened
    /// The tag did not match. AES-CM leaves the packet as it arrived (the tag is checked first);
    /// AEAD zeroes the payload it had decrypted.
    case authenticationFailed
    /// OpenSSL itself failed (not expected with valid contexts).
    case cipherFailed
}

/// The per-packet cryptography of one direction (RFC 3711 §4 for AES_CM_128_HMAC_SHA1_80,
/// RFC 7714 §8–9 for AEAD_AES_128_GCM) over OpenSSL EVP, on raw packet memory.
///
/// Every EVP context is keyed once here; per packet only the IV changes. Re-keying per packet
/// (or creating contexts per packet, as NSS-backed libsrtp2 effectively does) is what made SRTP
/// the top CPU cost. All scratch memory (IVs, digests) is allocated once, so this code allocates
/// nothing per packet; only OpenSSL 3.0's HMAC restart mallocs internally (it duplicates its
/// digest state), which the AEAD profile avoids. Not thread-safe: one owner, one queue.
///
/// AEAD_AES_128_GCM runs on `CAESGCM` (OpenSSL's GCM mode over an AES-NI block function) where
/// the CPU allows: through EVP, whose per-packet nonce and tag calls go through OpenSSL 3's
/// parameter lookups, protecting a listener's audio packet took about 4,370 instructions, this
/// way about 2,360 (`TickProfile`). EVP stays the path on other CPUs and for AES-CM.
final class SRTPPacketCipher {
    let profile: SRTPProtectionProfile
    /// EVP contexts: AES-CM's counter mode, or GCM where `CAESGCM` is not used.
    private let rtpCipher: OpaquePointer?
    private let rtcpCipher: OpaquePointer?
    /// `chorus_aes128gcm` contexts: GCM on AES-NI.
    private let rtpAESNI: OpaquePointer?
    private let rtcpAESNI: OpaquePointer?
    /// HMAC-SHA1 contexts, AES-CM only (GCM authenticates itself).
    private let rtpMAC: OpaquePointer?
    private let rtcpMAC: OpaquePointer?
    /// 0..<16 SRTP salt, 16..<32 SRTCP salt (zero-padded), 32..<48 IV, 48..<80 digest, 80..<84 ROC.
    private let scratch: UnsafeMutableRawPointer

    /// HMAC-SHA1-80 tag length (RFC 3711 §5.2) and the GCM tag length (RFC 7714 §14.2).
    static func tagLength(_ profile: SRTPProtectionProfile) -> Int {
        profile == .aeadAES128GCM ? 16 : 10
    }

    /// Whether GCM keys go to `CAESGCM` on this CPU (asked once: CPUID exits to the hypervisor).
    static let usesAESNI = chorus_aes128gcm_available() != 0

    /// `seals`: keyed for protecting (true) or unprotecting; GCM contexts work one way only.
    /// `allowsAESNI: false` keeps GCM on EVP (tests compare the two paths).
    init(_ keys: SRTPSessionKeys, seals: Bool, allowsAESNI: Bool = true) throws(SRTPError) {
        profile = keys.profile
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: 96, alignment: 16)
        scratch.initializeMemory(as: UInt8.self, repeating: 0, count: 96)
        keys.rtpSalt.withUnsafeBytes { scratch.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        keys.rtcpSalt.withUnsafeBytes { (scratch + 16).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        self.scratch = scratch
        let gcm = keys.profile == .aeadAES128GCM
        let aesni = gcm && allowsAESNI && Self.usesAESNI
        let rtpAESNI = aesni ? Self.aesniGCM(keys.rtpKey) : nil
        let rtcpAESNI = aesni ? Self.aesniGCM(keys.rtcpKey) : nil
        // AES-CM encryption and decryption are the same keystream XOR: always "encrypt".
        let type = gcm ? EVP_aes_128_gcm() : EVP_aes_128_ctr()
        let rtp = aesni ? nil : Self.cipher(type, keys.rtpKey, encrypt: seals || !gcm)
        let rtcp = aesni ? nil : Self.cipher(type, keys.rtcpKey, encrypt: seals || !gcm)
        let rtpMAC = gcm ? nil : Self.hmacSHA1(keys.rtpAuthKey)
        let rtcpMAC = gcm ? nil : Self.hmacSHA1(keys.rtcpAuthKey)
        let ciphersReady = aesni ? rtpAESNI != nil && rtcpAESNI != nil : rtp != nil && rtcp != nil
        guard ciphersReady, gcm || (rtpMAC != nil && rtcpMAC != nil) else {
            if let rtp { EVP_CIPHER_CTX_free(rtp) }
            if let rtcp { EVP_CIPHER_CTX_free(rtcp) }
            chorus_aes128gcm_free(rtpAESNI)
            chorus_aes128gcm_free(rtcpAESNI)
            if let rtpMAC { EVP_MAC_CTX_free(rtpMAC) }
            if let rtcpMAC { EVP_MAC_CTX_free(rtcpMAC) }
            OPENSSL_cleanse(scratch, 96)
            scratch.deallocate()
            throw .failed(code: LibSRTPStatus.initFail)
        }
        rtpCipher = rtp
        rtcpCipher = rtcp
        self.rtpAESNI = rtpAESNI
        self.rtcpAESNI = rtcpAESNI
        self.rtpMAC = rtpMAC
        self.rtcpMAC = rtcpMAC
    }

    deinit {
        if let rtpCipher { EVP_CIPHER_CTX_free(rtpCipher) }
        if let rtcpCipher { EVP_CIPHER_CTX_free(rtcpCipher) }
        chorus_aes128gcm_free(rtpAESNI)
        chorus_aes128gcm_free(rtcpAESNI)
        if let rtpMAC { EVP_MAC_CTX_free(rtpMAC) }
        if let rtcpMAC { EVP_MAC_CTX_free(rtcpMAC) }
        // Salts are key material: wipe before returning the memory.
        OPENSSL_cleanse(scratch, 96)
        scratch.deallocate()
    }

    private static func cipher(_ type: OpaquePointer?, _ key: [UInt8], encrypt: Bool) -> OpaquePointer? {
        guard let context = EVP_CIPHER_CTX_new() else { return nil }
        let ok = key.withUnsafeBufferPointer {
            EVP_CipherInit_ex(context, type, nil, $0.baseAddress, nil, encrypt ? 1 : 0)
        }
        guard ok == 1 else {
            EVP_CIPHER_CTX_free(context)
            return nil
        }
        return context
    }

    private static func aesniGCM(_ key: [UInt8]) -> OpaquePointer? {
        guard key.count == 16 else { return nil }
        return key.withUnsafeBufferPointer { chorus_aes128gcm_new($0.baseAddress) }
    }

    private static func hmacSHA1(_ key: [UInt8]) -> OpaquePointer? {
        guard let mac = EVP_MAC_fetch(nil, "HMAC", nil) else { return nil }
        defer { EVP_MAC_free(mac) }  // the context keeps its own reference
        guard let context = EVP_MAC_CTX_new(mac) else { return nil }
        let ok = "digest".withCString { name in
            "SHA1".withCString { digest in
                var params = [
                    OSSL_PARAM_construct_utf8_string(name, UnsafeMutablePointer(mutating: digest), 0),
                    OSSL_PARAM_construct_end(),
                ]
                return key.withUnsafeBufferPointer { EVP_MAC_init(context, $0.baseAddress, $0.count, &params) }
            }
        }
        guard ok == 1 else {
            EVP_MAC_CTX_free(context)
            return nil
        }
        return context
    }

    // MARK: IVs

    private var iv: UnsafeMutableRawPointer { scratch + 32 }
    private var digest: UnsafeMutableRawPointer { scratch + 48 }

    /// AES-CM IV (RFC 3711 §4.1.1): (salt·2^16) XOR (SSRC·2^64) XOR (index·2^16), 16 bytes. SRTCP
    /// uses the same layout with its 31-bit index (§3.4).
    private func counterIV(salt: Int, ssrc: UInt32, index: UInt64) {
        iv.copyMemory(from: scratch + salt, byteCount: 16)
        xorBigEndian(UInt64(ssrc), bytes: 4, at: 4)
        xorBigEndian(index, bytes: 6, at: 8)
    }

    /// AEAD IV (RFC 7714 §8.1): (00 00 ‖ SSRC ‖ ROC ‖ SEQ) XOR salt, 12 bytes, where ROC ‖ SEQ is
    /// the 48-bit index; for SRTCP (§9.1) (00 00 ‖ SSRC ‖ 00 00 ‖ 0 ‖ 31-bit index) XOR salt, the
    /// same layout with the SRTCP index in the low 32 of those 48 bits.
    private func aeadIV(salt: Int, ssrc: UInt32, index: UInt64) {
        iv.copyMemory(from: scratch + salt, byteCount: 12)
        xorBigEndian(UInt64(ssrc), bytes: 4, at: 2)
        xorBigEndian(index, bytes: 6, at: 6)
    }

    /// XORs the low `bytes` (4 or 6) bytes of `value`, big-endian, into the IV at `offset`: two
    /// word-sized XORs rather than a loop of bytes, since this runs for every packet.
    private func xorBigEndian(_ value: UInt64, bytes: Int, at offset: Int) {
        if bytes == 6 {
            let high = iv.loadUnaligned(fromByteOffset: offset, as: UInt16.self)
            iv.storeBytes(of: high ^ UInt16(truncatingIfNeeded: value >> 32).bigEndian, toByteOffset: offset,
                          as: UInt16.self)
        }
        let low = iv.loadUnaligned(fromByteOffset: offset + bytes - 4, as: UInt32.self)
        iv.storeBytes(of: low ^ UInt32(truncatingIfNeeded: value).bigEndian, toByteOffset: offset + bytes - 4,
                      as: UInt32.self)
    }

    // MARK: AES-CM + HMAC-SHA1-80

    /// XORs the AES-CM keystream for the current IV into `count` bytes at `start`.
    private func counterMode(_ context: OpaquePointer?, _ start: UnsafeMutableRawPointer, _ count: Int) -> Bool {
        guard let context, EVP_EncryptInit_ex(context, nil, nil, nil, iv.bytes) == 1 else { return false }
        guard count > 0 else { return true }
        var written: Int32 = 0
        return EVP_EncryptUpdate(context, start.bytes, &written, start.bytes, Int32(count)) == 1
            && written == Int32(count)
    }

    /// Full 20-byte HMAC-SHA1 of `count` bytes at `start` (then the 4-byte ROC, if given) into
    /// the digest scratch. EVP_MAC_init with no key restarts from the precomputed key state.
    private func hmac(_ context: OpaquePointer?, _ start: UnsafeRawPointer, _ count: Int, roc: UInt32?) -> Bool {
        guard let context, EVP_MAC_init(context, nil, 0, nil) == 1,
              EVP_MAC_update(context, start.assumingMemoryBound(to: UInt8.self), count) == 1
        else { return false }
        if let roc {
            // RFC 3711 §4.2: the authenticated portion is followed by the ROC, big-endian.
            (scratch + 80).storeBytes(of: roc.bigEndian, as: UInt32.self)
            guard EVP_MAC_update(context, (scratch + 80).bytes, 4) == 1 else { return false }
        }
        var length = 0
        return EVP_MAC_final(context, digest.bytes, &length, 20) == 1 && length == 20
    }

    /// Protects an RTP packet of `length` bytes at `packet` (header `headerLength`) with room
    /// for the tag after it: encrypts the payload and appends the 80-bit tag over
    /// header ‖ payload ‖ ROC (RFC 3711 §3.1, §4.2).
    func sealRTP(_ packet: UnsafeMutableRawPointer, length: Int, headerLength: Int, ssrc: UInt32, index: UInt64)
        -> Bool
    {
        if profile == .aeadAES128GCM {
            aeadIV(salt: 0, ssrc: ssrc, index: index)
            return gcmSeal(rtpCipher, rtpAESNI, packet, aad: headerLength, body: headerLength, count: length - headerLength,
                           tag: packet + length, trailer: nil)
        }
        counterIV(salt: 0, ssrc: ssrc, index: index)
        guard counterMode(rtpCipher, packet + headerLength, length - headerLength),
              hmac(rtpMAC, packet, length, roc: UInt32(truncatingIfNeeded: index >> 16))
        else { return false }
        (packet + length).copyMemory(from: digest, byteCount: 10)
        return true
    }

    /// Verifies and decrypts an SRTP packet of `length` bytes including its tag.
    func openRTP(_ packet: UnsafeMutableRawPointer, length: Int, headerLength: Int, ssrc: UInt32, index: UInt64)
        -> SRTPOpenResult
    {
        if profile == .aeadAES128GCM {
            aeadIV(salt: 0, ssrc: ssrc, index: index)
            return gcmOpen(rtpCipher, rtpAESNI, packet, aad: headerLength, body: headerLength,
                           count: length - 16 - headerLength, tag: packet + length - 16, trailer: nil)
        }
        // Authenticate before decrypting (RFC 3711 §3.3 step 5), so a forgery changes nothing.
        let roc = UInt32(truncatingIfNeeded: index >> 16)
        guard hmac(rtpMAC, packet, length - 10, roc: roc) else { return .cipherFailed }
        guard CRYPTO_memcmp(digest, packet + length - 10, 10) == 0 else { return .authenticationFailed }
        counterIV(salt: 0, ssrc: ssrc, index: index)
        return counterMode(rtpCipher, packet + headerLength, length - 10 - headerLength) ? .opened : .cipherFailed
    }

    /// Protects an RTCP packet of `length` bytes, writing the E‖index word and the tag after it
    /// (RFC 3711 §3.4: E‖index then tag; RFC 7714 §9: tag then E‖index, the word also being AAD).
    func sealRTCP(_ packet: UnsafeMutableRawPointer, length: Int, ssrc: UInt32, index: UInt32) -> Bool {
        let word = (UInt32(0x8000_0000) | index).bigEndian
        if profile == .aeadAES128GCM {
            (packet + length + 16).storeBytes(of: word, as: UInt32.self)
            aeadIV(salt: 16, ssrc: ssrc, index: UInt64(index))
            return gcmSeal(rtcpCipher, rtcpAESNI, packet, aad: 8, body: 8, count: length - 8, tag: packet + length,
                           trailer: packet + length + 16)
        }
        (packet + length).storeBytes(of: word, as: UInt32.self)
        counterIV(salt: 16, ssrc: ssrc, index: UInt64(index))
        guard counterMode(rtcpCipher, packet + 8, length - 8), hmac(rtcpMAC, packet, length + 4, roc: nil)
        else { return false }
        (packet + length + 4).copyMemory(from: digest, byteCount: 10)
        return true
    }

    /// Verifies and decrypts an SRTCP packet of `length` bytes including trailer and tag. An
    /// AEAD packet with E = 0 is authenticated only, the whole packet being AAD (RFC 7714 §9.3).
    func openRTCP(_ packet: UnsafeMutableRawPointer, length: Int, ssrc: UInt32, index: UInt32, encrypted: Bool)
        -> SRTPOpenResult
    {
        if profile == .aeadAES128GCM {
            aeadIV(salt: 16, ssrc: ssrc, index: UInt64(index))
            let end = length - 20
            return gcmOpen(rtcpCipher, rtcpAESNI, packet, aad: encrypted ? 8 : end, body: 8, count: encrypted ? end - 8 : 0,
                           tag: packet + end, trailer: packet + length - 4)
        }
        guard hmac(rtcpMAC, packet, length - 10, roc: nil) else { return .cipherFailed }
        guard CRYPTO_memcmp(digest, packet + length - 10, 10) == 0 else { return .authenticationFailed }
        counterIV(salt: 16, ssrc: ssrc, index: UInt64(index))
        return counterMode(rtcpCipher, packet + 8, length - 14 - 8) ? .opened : .cipherFailed
    }

    // MARK: AEAD_AES_128_GCM

    /// GCM over the current IV: AAD = `aad` bytes from the packet start (then the SRTCP word at
    /// `trailer`), encrypts `count` bytes at `body` in place and writes the 16-byte tag.
    private func gcmSeal(_ context: OpaquePointer?, _ aesni: OpaquePointer?, _ packet: UnsafeMutableRawPointer,
                         aad: Int, body: Int, count: Int, tag: UnsafeMutableRawPointer,
                         trailer: UnsafeMutableRawPointer?) -> Bool
    {
        let bytes = packet.bytes
        // C takes the lengths as size_t: a negative one must never get there.
        guard aad >= 0, count >= 0 else { return false }
        if let aesni {
            return chorus_aes128gcm_seal(aesni, iv.bytes, bytes, aad, trailer?.bytes, trailer == nil ? 0 : 4,
                                         bytes + body, count, tag.bytes) == 1
        }
        var written: Int32 = 0
        guard let context, EVP_EncryptInit_ex(context, nil, nil, nil, iv.bytes) == 1,
              EVP_EncryptUpdate(context, nil, &written, bytes, Int32(aad)) == 1
        else { return false }
        if let trailer {
            guard EVP_EncryptUpdate(context, nil, &written, trailer.bytes, 4) == 1 else { return false }
        }
        if count > 0 {
            guard EVP_EncryptUpdate(context, bytes + body, &written, bytes + body, Int32(count)) == 1
            else { return false }
        }
        return EVP_EncryptFinal_ex(context, digest.bytes, &written) == 1
            && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1
    }

    /// GCM verification and decryption. On a bad tag the bytes already decrypted are zeroed:
    /// unauthenticated plaintext is never handed out, and NSS-backed libsrtp2 leaves the same zeros.
    private func gcmOpen(_ context: OpaquePointer?, _ aesni: OpaquePointer?, _ packet: UnsafeMutableRawPointer,
                         aad: Int, body: Int, count: Int, tag: UnsafeMutableRawPointer,
                         trailer: UnsafeMutableRawPointer?) -> SRTPOpenResult
    {
        let bytes = packet.bytes
        guard aad >= 0, count >= 0 else { return .cipherFailed }  // size_t in C, as in gcmSeal
        if let aesni {
            switch chorus_aes128gcm_open(aesni, iv.bytes, bytes, aad, trailer?.bytes, trailer == nil ? 0 : 4,
                                         bytes + body, count, tag.bytes) {
            case 1: return .opened
            case 0: return .authenticationFailed
            default: return .cipherFailed
            }
        }
        var written: Int32 = 0
        guard let context, EVP_DecryptInit_ex(context, nil, nil, nil, iv.bytes) == 1,
              EVP_DecryptUpdate(context, nil, &written, bytes, Int32(aad)) == 1
        else { return .cipherFailed }
        if let trailer {
            guard EVP_DecryptUpdate(context, nil, &written, trailer.bytes, 4) == 1 else { return .cipherFailed }
        }
        if count > 0 {
            guard EVP_DecryptUpdate(context, bytes + body, &written, bytes + body, Int32(count)) == 1
            else { return .cipherFailed }
        }
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, 16, tag) == 1 else { return .cipherFailed }
        if EVP_DecryptFinal_ex(context, digest.bytes, &written) == 1 { return .opened }
        if count > 0 { OPENSSL_cleanse(bytes + body, count) }
        return .authenticationFailed
    }
}

extension UnsafeMutableRawPointer {
    /// The same memory as bytes, the pointer type OpenSSL's EVP functions take.
    fileprivate var bytes: UnsafeMutablePointer<UInt8> { assumingMemoryBound(to: UInt8.self) }
}
