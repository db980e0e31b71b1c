import COpenSSL

/// The SRTP key derivation function of RFC 3711 §4.3 over OpenSSL: the AES-CM PRF (§4.3.3) keyed
/// with the master key, with key_derivation_rate 0, so every session key is derived once.
///
/// RFC 7714 §11 keeps the same PRF for AEAD_AES_128_GCM; its master salt is 96 bits, and it is
/// zero-padded on the right to the 112 bits the PRF expects — the layout libsrtp2 uses, which is
/// what makes the two implementations agree byte for byte.
enum SRTPKeyDerivation {
    /// The key derivation labels of RFC 3711 §4.3.1 (SRTP) and §4.3.2 (SRTCP).
    enum Label: UInt8, CaseIterable {
        case rtpEncryption = 0x00
        case rtpAuthentication = 0x01
        case rtpSalt = 0x02
        case rtcpEncryption = 0x03
        case rtcpAuthentication = 0x04
        case rtcpSalt = 0x05
    }

    /// `count` bytes of AES-128 counter-mode keystream starting at the 16-byte counter block `iv`
    /// (RFC 3711 §4.1.1: the keystream is the encryption of zeros, the last 16 bits of the counter
    /// count blocks). This is both the PRF of §4.3.3 and the generator checked by Appendix B.2.
    static func keystream(key: [UInt8], iv: [UInt8], count: Int) throws(SRTPError) -> [UInt8] {
        guard key.count == 16, iv.count == 16, count >= 0, count <= Int(Int32.max) else { throw .malformed }
        guard let context = EVP_CIPHER_CTX_new() else { throw .failed(code: LibSRTPStatus.initFail) }
        defer { EVP_CIPHER_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: count)
        let ok = key.withUnsafeBufferPointer { key in
            iv.withUnsafeBufferPointer { iv in
                output.withUnsafeMutableBufferPointer { out -> Bool in
                    guard EVP_EncryptInit_ex(context, EVP_aes_128_ctr(), nil, key.baseAddress, iv.baseAddress) == 1
                    else { return false }
                    guard let base = out.baseAddress, count > 0 else { return true }
                    // Counter mode in place over zeros yields the keystream itself.
                    var written: Int32 = 0
                    return EVP_EncryptUpdate(context, base, &written, base, Int32(count)) == 1
                        && written == Int32(count)
                }
            }
        }
        guard ok else { throw .failed(code: LibSRTPStatus.cipherFail) }
        return output
    }

    /// One session key (RFC 3711 §4.3.1): AES-CM of x·2^16 under the master key, where
    /// x = (label ‖ index DIV kdr) XOR master_salt. With kdr = 0 the index part is 48 zero bits,
    /// so the label lands in byte 7 of the 14-byte (112-bit) x.
    static func derive(masterKey: [UInt8], masterSalt: [UInt8], label: Label, count: Int) throws(SRTPError)
        -> [UInt8]
    {
        guard masterKey.count == 16, masterSalt.count <= 14 else { throw .malformed }
        var iv = [UInt8](repeating: 0, count: 16)
        // Shorter (96-bit, RFC 7714) salts sit at the left, zero-padded: the x·2^16 layout.
        for (offset, byte) in masterSalt.enumerated() { iv[offset] = byte }
        iv[7] ^= label.rawValue
        return try keystream(key: masterKey, iv: iv, count: count)
    }
}

/// The six session keys one master key ‖ salt yields for one direction (RFC 3711 §4.3): cipher
/// key, salt and (for AES-CM) HMAC-SHA1 key, separately for SRTP and SRTCP.
struct SRTPSessionKeys: Equatable, Sendable {
    let profile: SRTPProtectionProfile
    let rtpKey: [UInt8]
    let rtpSalt: [UInt8]
    /// 160-bit HMAC-SHA1 key (RFC 3711 §4.2.1, n_a = 160); empty for AEAD profiles.
    let rtpAuthKey: [UInt8]
    let rtcpKey: [UInt8]
    let rtcpSalt: [UInt8]
    let rtcpAuthKey: [UInt8]

    /// Length of the HMAC-SHA1 session key (RFC 3711 §8.2 default n_a).
    static let authKeyLength = 20

    /// Derives all session keys from `master` (key ‖ salt, as `SRTPKeyingMaterial` carries them).
    init(profile: SRTPProtectionProfile, master: [UInt8]) throws(SRTPError) {
        guard master.count == profile.keyLength + profile.saltLength else { throw .malformed }
        let key = Array(master[0..<profile.keyLength])
        let salt = Array(master[profile.keyLength...])
        func derive(_ label: SRTPKeyDerivation.Label, _ count: Int) throws(SRTPError) -> [UInt8] {
            try SRTPKeyDerivation.derive(masterKey: key, masterSalt: salt, label: label, count: count)
        }
        let authLength = profile == .aes128CMHMACSHA1_80 ? Self.authKeyLength : 0
        try self.init(
            profile: profile,
            rtpKey: derive(.rtpEncryption, profile.keyLength),
            rtpSalt: derive(.rtpSalt, profile.saltLength),
            rtpAuthKey: derive(.rtpAuthentication, authLength),
            rtcpKey: derive(.rtcpEncryption, profile.keyLength),
            rtcpSalt: derive(.rtcpSalt, profile.saltLength),
            rtcpAuthKey: derive(.rtcpAuthentication, authLength))
    }

    /// Session keys given directly (the RFC 7714 §16–17 vectors are stated in session keys).
    init(profile: SRTPProtectionProfile, rtpKey: [UInt8], rtpSalt: [UInt8], rtpAuthKey: [UInt8],
         rtcpKey: [UInt8], rtcpSalt: [UInt8], rtcpAuthKey: [UInt8]) throws(SRTPError)
    {
        let authLength = profile == .aes128CMHMACSHA1_80 ? Self.authKeyLength : 0
        guard rtpKey.count == profile.keyLength, rtcpKey.count == profile.keyLength,
              rtpSalt.count == profile.saltLength, rtcpSalt.count == profile.saltLength,
              rtpAuthKey.count == authLength, rtcpAuthKey.count == authLength
        else { throw .malformed }
        self.profile = profile
        self.rtpKey = rtpKey
        self.rtpSalt = rtpSalt
        self.rtpAuthKey = rtpAuthKey
        self.rtcpKey = rtcpKey
        self.rtcpSalt = rtcpSalt
        self.rtcpAuthKey = rtcpAuthKey
    }
}
