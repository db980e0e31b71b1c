@testable import SRTP
import ChorusCore
import Testing

// The OpenSSL transform is checked two ways: against published vectors (RFC 3711 Appendix B,
// RFC 7714 §16–17, transcribed here, not computed), and packet for packet against
// LibSRTPTransform, which Chorus runs today: same keys, same packets, same bytes out, same
// errors. `hex` comes from SRTPTests.swift.

/// What one call did: the bytes it left, or the error it threw and the bytes it left.
enum Outcome: Equatable, CustomStringConvertible {
    case ok([UInt8])
    case failed(SRTPError, [UInt8])

    init(_ packet: [UInt8], _ operation: (inout [UInt8]) throws(SRTPError) -> Void) {
        var bytes = packet
        do throws(SRTPError) {
            try operation(&bytes)
            self = .ok(bytes)
        } catch {
            self = .failed(error, bytes)
        }
    }

    var error: SRTPError? { if case .failed(let error, _) = self { error } else { nil } }
    var description: String {
        switch self {
        case .ok(let bytes): "ok(\(bytes.count) bytes)"
        case .failed(let error, let bytes): "\(error)(\(bytes.count) bytes)"
        }
    }
}

/// An RTP packet: version 2, optional CSRCs and one-word-per-`extensionWords` header extension.
func rtpPacket(seq: UInt16, ssrc: UInt32, payload: Int, csrcs: Int = 0, extensionWords: Int? = nil,
               fill: UInt8 = 0xAB) -> [UInt8]
{
    var packet: [UInt8] = [0x80 | UInt8(csrcs) | (extensionWords == nil ? 0 : 0x10), 111,
                           UInt8(seq >> 8), UInt8(seq & 0xFF), 0, 0, 0x12, 0x34]
    packet += withUnsafeBytes(of: ssrc.bigEndian, Array.init)
    for i in 0..<csrcs { packet += [0xC0, 0, 0, UInt8(i)] }
    if let words = extensionWords {
        packet += [0xBE, 0xDE, UInt8(words >> 8), UInt8(words & 0xFF)]
        for i in 0..<words { packet += [0x10, UInt8(truncatingIfNeeded: i), 0, 0] }
    }
    return packet + (0..<payload).map { UInt8(truncatingIfNeeded: Int(fill) &+ $0) }
}

/// A receiver report from `ssrc` with `blocks` report blocks (RFC 3550 §6.4.2).
func rtcpPacket(ssrc: UInt32, blocks: Int = 1) -> [UInt8] {
    let words = 1 + 6 * blocks
    var packet: [UInt8] = [0x80 | UInt8(blocks & 31), 201, UInt8(truncatingIfNeeded: words >> 8),
                           UInt8(truncatingIfNeeded: words)]
    packet += withUnsafeBytes(of: ssrc.bigEndian, Array.init)
    for i in 0..<(24 * blocks) { packet.append(UInt8(truncatingIfNeeded: i &* 7)) }
    return packet
}

/// The same direction built twice, over libsrtp2 and over OpenSSL.
struct Twins {
    let lib: LibSRTPTransform
    let ossl: OpenSSLSRTPTransform

    init(_ keys: SRTPKeyingMaterial) throws {
        lib = try LibSRTPTransform(keys)
        ossl = try OpenSSLSRTPTransform(keys)
    }

    /// Runs `operation` on both and expects identical outcomes; returns OpenSSL's.
    @discardableResult
    func both(_ packet: [UInt8], _ operation: (any SRTPTransform) -> (inout [UInt8]) throws(SRTPError) -> Void,
              sourceLocation: SourceLocation = #_sourceLocation) -> Outcome
    {
        let expected = Outcome(packet, operation(lib))
        let actual = Outcome(packet, operation(ossl))
        #expect(actual == expected, sourceLocation: sourceLocation)
        return actual
    }
}

/// A sender and a receiver pair per implementation, keyed as the two ends of one call.
struct Call {
    let sender: Twins
    let receiver: Twins

    init(_ profile: SRTPProtectionProfile, seed: UInt8 = 1) throws {
        let length = profile.keyLength + profile.saltLength
        let a = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
        let b = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 17 &+ Int(seed) &+ 100) }
        sender = try Twins(SRTPKeyingMaterial(profile: profile, local: a, remote: b))
        receiver = try Twins(SRTPKeyingMaterial(profile: profile, local: b, remote: a))
    }

    /// Protects with both senders (bytes must match) and returns the protected packet.
    func protect(_ packet: [UInt8], rtcp: Bool = false, sourceLocation: SourceLocation = #_sourceLocation)
        -> [UInt8]
    {
        let outcome = sender.both(packet, { rtcp ? $0.protectRTCP : $0.protectRTP },
                                  sourceLocation: sourceLocation)
        guard case .ok(let bytes) = outcome else {
            Issue.record("protect failed: \(outcome)", sourceLocation: sourceLocation)
            return packet
        }
        return bytes
    }

    /// Unprotects with both receivers (outcomes must match) and returns the outcome.
    @discardableResult
    func unprotect(_ packet: [UInt8], rtcp: Bool = false, sourceLocation: SourceLocation = #_sourceLocation)
        -> Outcome
    {
        receiver.both(packet, { rtcp ? $0.unprotectRTCP : $0.unprotectRTP }, sourceLocation: sourceLocation)
    }
}

/// RFC 3711 Appendix B and RFC 7714 §16–17 vectors, and the existing libsrtp2 known answers.
@Suite("SRTP over OpenSSL: published vectors")
struct OpenSSLSRTPVectorTests {
    // RFC 3711 Appendix B.2.
    let b2Key = hex("2B7E151628AED2A6ABF7158809CF4F3C")
    let b2Counter = hex("F0F1F2F3F4F5F6F7F8F9FAFBFCFD0000")
    let b2First = hex("E03EAD0935C95E80E166B16DD92B4EB4" + "D23513162B02D0F72A43A2FE4A5F97AB"
        + "41E95B3BB0A2E8DD477901E4FCA894C0")
    let b2Last = hex("EC8CDF7398607CB0F2D21675EA9EA1E4" + "362B7C3C6773516318A077D7FC5073AE"
        + "6A2CC3787889374FBEB4C81B17BA6C44")

    @Test func rfc3711B2AESCMKeystream() throws {
        // The whole 1,044,512-octet segment (65,282 blocks): its ends are the table's rows.
        let stream = try SRTPKeyDerivation.keystream(key: b2Key, iv: b2Counter, count: 1_044_512)
        #expect(Array(stream.prefix(48)) == b2First)
        #expect(Array(stream.suffix(48)) == b2Last)
    }

    @Test func rfc3711B2ThroughThePacketIV() throws {
        // Session salt F0…FD with SSRC 0, ROC 0, SEQ 0: the IV of §4.1.1 is the table's first
        // counter, so an all-zero payload encrypts to the keystream itself.
        let salt = Array(b2Counter.prefix(14)), authKey = [UInt8](repeating: 0, count: 20)
        let keys = try SRTPSessionKeys(profile: .aes128CMHMACSHA1_80, rtpKey: b2Key, rtpSalt: salt, rtpAuthKey: authKey,
                                       rtcpKey: b2Key, rtcpSalt: salt, rtcpAuthKey: authKey)
        let transform = try OpenSSLSRTPTransform(sessionKeys: keys, remote: keys)
        var packet = [0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 48)
        try transform.protectRTP(&packet)
        #expect(Array(packet[12..<60]) == b2First)
        #expect(packet.count == 12 + 48 + 10)
    }

    @Test func rfc3711B3KeyDerivation() throws {
        let key = hex("E1F97A0D3E018BE0D64FA32C06DE4139"), salt = hex("0EC675AD498AFEEBB6960B3AABE6")
        #expect(try SRTPKeyDerivation.derive(masterKey: key, masterSalt: salt, label: .rtpEncryption, count: 16)
            == hex("C61E7A93744F39EE10734AFE3FF7A087"))
        #expect(try SRTPKeyDerivation.derive(masterKey: key, masterSalt: salt, label: .rtpSalt, count: 14)
            == hex("30CBBC08863D8C85D49DB34A9AE1"))
        // The 94-octet auth key of the appendix; HMAC-SHA1 uses its first 20 octets.
        let auth = hex("CEBE321F6FF7716B6FD4AB49AF256A15" + "6D38BAA48F0A0ACF3C34E2359E6CDBCE"
            + "E049646C43D9327AD175578EF7227098" + "6371C10C9A369AC2F94A8C5FBCDDDC25"
            + "6D6E919A48B610EF17C2041E47403576" + "6B68642C59BBFC2F34DB60DBDFB2")
        #expect(try SRTPKeyDerivation.derive(masterKey: key, masterSalt: salt, label: .rtpAuthentication, count: 94)
            == auth)
        let session = try SRTPSessionKeys(profile: .aes128CMHMACSHA1_80, master: key + salt)
        #expect(session.rtpKey == hex("C61E7A93744F39EE10734AFE3FF7A087"))
        #expect(session.rtpSalt == hex("30CBBC08863D8C85D49DB34A9AE1"))
        #expect(session.rtpAuthKey == Array(auth.prefix(20)))
        // SRTCP labels 3–5 give different keys from the same master.
        #expect(Set([session.rtpKey, session.rtcpKey]).count == 2 && session.rtcpSalt != session.rtpSalt)
    }

    // RFC 7714 §16–17: session key and salt, used for SRTP and SRTCP alike.
    func rfc7714Transform() throws -> OpenSSLSRTPTransform {
        let key = hex("000102030405060708090a0b0c0d0e0f"), salt = hex("517569642070726f2071756f")
        let keys = try SRTPSessionKeys(profile: .aeadAES128GCM, rtpKey: key, rtpSalt: salt, rtpAuthKey: [],
                                       rtcpKey: key, rtcpSalt: salt, rtcpAuthKey: [])
        return try OpenSSLSRTPTransform(sessionKeys: keys, remote: keys)
    }

    let rfc7714RTP = hex("8040f17b8041f8d35501a0b247616c6c696120657374206f6d6e69732064697669736120696e207061727465732074726573")
    let rfc7714SRTP = hex("8040f17b8041f8d35501a0b2f24de3a3fb34de6cacba861c9d7e4bcabe633bd50d294e6f42a5f47a51c7d19b36de3adf8833899d7f27beb16a9152cf765ee4390cce")
    let rfc7714RTCP = hex("81c8000d4d6172734e5450314e545032525450200000042a0000e9304c756e61deadbeefdeadbeefdeadbeefdeadbeefdeadbeef")
    let rfc7714SRTCP = hex("81c8000d4d61727363e94885dcdab67ca727d7662f6b7e997ff5c0f76c06f32dc676a5f1730d6fda4ce09b4686303ded0bb9275bc84aa45896cf4d2fc5abf87245d9eade800005d4")
    let rfc7714SRTCPTagOnly = hex("81c8000d4d6172734e5450314e545032525450200000042a0000e9304c756e61deadbeefdeadbeefdeadbeefdeadbeefdeadbeef841dd9683dd78ec92ae58790125f62b3000005d4")

    @Test func rfc7714Section16_1AEADSRTP() throws {
        var packet = rfc7714RTP
        try rfc7714Transform().protectRTP(&packet)
        #expect(packet == rfc7714SRTP)  // §16.1.1 encryption
        let receiver = try rfc7714Transform()
        try receiver.unprotectRTP(&packet)
        #expect(packet == rfc7714RTP)  // §16.1.2 decryption
        var tampered = rfc7714SRTP
        tampered[20] ^= 1
        #expect(throws: SRTPError.authenticationFailed) { try rfc7714Transform().unprotectRTP(&tampered) }
        #expect(tampered[12..<tampered.count - 16].allSatisfy { $0 == 0 }, "no unauthenticated plaintext")
    }

    @Test func rfc7714Section17_1AEADSRTCP() throws {
        let sender = try rfc7714Transform()
        sender.setLastSRTCPIndex(0x5d3, ssrc: 0x4d61_7273)
        var packet = rfc7714RTCP
        try sender.protectRTCP(&packet)
        #expect(packet == rfc7714SRTCP)
        try rfc7714Transform().unprotectRTCP(&packet)
        #expect(packet == rfc7714RTCP)
    }

    @Test func rfc7714Section17_3AuthenticatedOnlySRTCP() throws {
        // E = 0: nothing is encrypted, the whole packet and the index word are AAD (§9.3).
        var packet = rfc7714SRTCPTagOnly
        try rfc7714Transform().unprotectRTCP(&packet)
        #expect(packet == rfc7714RTCP)
        var forged = rfc7714SRTCPTagOnly
        forged[12] ^= 0x80
        #expect(throws: SRTPError.authenticationFailed) { try rfc7714Transform().unprotectRTCP(&forged) }
    }

    @Test func existingKnownAnswersFromMasterKeys() throws {
        // The libsrtp2 known answers of SRTPTests, through key derivation for both profiles.
        let key = hex("E1F97A0D3E018BE0D64FA32C06DE4139")
        let cmMaster = key + hex("0EC675AD498AFEEBB6960B3AABE6"), gcmMaster = key + hex("517569642070726f2071756f")
        let cm = try OpenSSLSRTPTransform(
            SRTPKeyingMaterial(profile: .aes128CMHMACSHA1_80, local: cmMaster, remote: cmMaster))
        var packet = hex("800f1234decafbadcafebabe") + [UInt8](repeating: 0xab, count: 16)
        try cm.protectRTP(&packet)
        #expect(packet == hex("800f1234decafbadcafebabe4e55dc4ce79978d88ca4d215949d2402b78d6acc99ea179b8dbb"))
        let gcm = try OpenSSLSRTPTransform(
            SRTPKeyingMaterial(profile: .aeadAES128GCM, local: gcmMaster, remote: gcmMaster))
        packet = rfc7714RTP
        try gcm.protectRTP(&packet)
        #expect(packet == hex("8040f17b8041f8d35501a0b28747a4a13c6bbc2a26a5eef4a3009f000e18007077f105390b98ef2b1f31a35760c1fff2dfab745554e0e8a23ae3647b65b8e46fc98d"))
    }

    @Test func keysOfTheWrongLengthAreRefusedLikeLibSRTP() {
        for profile in SRTPProtectionProfile.allCases {
            let bad = SRTPKeyingMaterial(profile: profile, local: [1, 2, 3], remote: [4, 5, 6])
            #expect(throws: SRTPError.malformed) { try OpenSSLSRTPTransform(bad) }
            #expect(throws: SRTPError.malformed) { try LibSRTPTransform(bad) }
        }
    }
}

/// Differential tests: every packet through both implementations, identical bytes and errors.
@Suite("SRTP over OpenSSL against libsrtp2, packet for packet")
struct OpenSSLSRTPInteropTests {
    @Test(arguments: SRTPProtectionProfile.allCases)
    func sameBytesBothWaysAcrossSSRCsAndTheWrap(_ profile: SRTPProtectionProfile) throws {
        let call = try Call(profile)
        let ssrcs: [UInt32] = [0x0102_0304, 0xDEAD_BEEF, 7, 0xFFFF_FFFF]
        // 160 packets per SSRC from 65,500: every stream crosses 65535 → 0 (ROC 0 → 1).
        for step in 0..<160 {
            for (n, ssrc) in ssrcs.enumerated() {
                let seq = UInt16(truncatingIfNeeded: 65_500 + step + n)
                let plain = rtpPacket(seq: seq, ssrc: ssrc, payload: (step * 37 + n * 101) % 1_200,
                                      csrcs: step % 3, extensionWords: step % 4 == 0 ? step % 5 : nil)
                let protected = call.protect(plain)
                #expect(protected.count == plain.count + SRTPPacketCipher.tagLength(profile))
                // Each receiver unprotects what the other implementation protected too.
                var viaLib = protected, viaOpenSSL = protected
                try call.receiver.lib.unprotectRTP(&viaOpenSSL)
                try call.receiver.ossl.unprotectRTP(&viaLib)
                #expect(viaLib == plain && viaOpenSSL == plain)
            }
            if step % 4 == 0 {
                for ssrc in ssrcs {
                    let plain = rtcpPacket(ssrc: ssrc, blocks: step % 3)
                    let protected = call.protect(plain, rtcp: true)
                    #expect(protected.count == plain.count + SRTPPacketCipher.tagLength(profile) + 4)
                    var viaLib = protected, viaOpenSSL = protected
                    try call.receiver.lib.unprotectRTCP(&viaOpenSSL)
                    try call.receiver.ossl.unprotectRTCP(&viaLib)
                    #expect(viaLib == plain && viaOpenSSL == plain)
                }
            }
        }
        #expect(call.sender.ossl.streamCounts.sent == ssrcs.count)
        #expect(call.receiver.ossl.streamCounts.received == ssrcs.count)
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func theRolloverCounterIsUsedAfterTheWrap(_ profile: SRTPProtectionProfile) throws {
        let call = try Call(profile)
        for seq in UInt16(65_530)...65_535 { call.unprotect(call.protect(rtpPacket(seq: seq, ssrc: 9, payload: 40))) }
        let afterWrap = call.protect(rtpPacket(seq: 2, ssrc: 9, payload: 40))
        #expect(call.unprotect(afterWrap).error == nil)
        // A receiver that never saw the wrap assumes ROC 0 and so cannot authenticate it.
        let fresh = try Call(profile)
        #expect(fresh.unprotect(afterWrap).error == .authenticationFailed)
        // A late packet from before the wrap is still placed at ROC 0 by the estimate.
        let late = try Call(profile)
        for seq in UInt16(65_530)...65_535 where seq != 65_533 {
            late.unprotect(late.protect(rtpPacket(seq: seq, ssrc: 9, payload: 40)))
        }
        let beforeWrap = late.protect(rtpPacket(seq: 65_533, ssrc: 9, payload: 40))
        late.unprotect(late.protect(rtpPacket(seq: 1, ssrc: 9, payload: 40)))
        #expect(late.unprotect(beforeWrap).error == nil)
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func reorderedReplayedAndTooOldRTP(_ profile: SRTPProtectionProfile) throws {
        let call = try Call(profile)
        let packets = (0..<1_200).map { call.protect(rtpPacket(seq: UInt16(1_000 + $0), ssrc: 0xABCD, payload: 20)) }
        // Deliver all but a few, in order; then the held-back ones late.
        let held: Set = [3, 150, 190, 1_000]
        for (n, packet) in packets.enumerated() where !held.contains(n) { #expect(call.unprotect(packet).error == nil) }
        #expect(call.unprotect(packets[1_000]).error == nil, "200 behind: inside the 1024 window")
        #expect(call.unprotect(packets[190]).error == nil, "1009 behind: inside")
        #expect(call.unprotect(packets[150]).error == .replayed, "1049 behind: older than the window")
        #expect(call.unprotect(packets[3]).error == .replayed)
        #expect(call.unprotect(packets[1_199]).error == .replayed, "a duplicate")
        #expect(call.unprotect(packets[1_000]).error == .replayed, "a late packet only once")
        // The replay check precedes the tag: a replayed index with a broken tag is "replayed".
        var broken = packets[1_100]
        broken[broken.count - 1] ^= 0xFF
        #expect(call.unprotect(broken).error == .replayed)
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func aJumpForgetsTheIndicesItPushesOut(_ profile: SRTPProtectionProfile) throws {
        let call = try Call(profile)
        let packets = (0..<1_100).map { call.protect(rtpPacket(seq: UInt16(100 + $0), ssrc: 0x99, payload: 8)) }
        for n in 0..<1_024 { call.unprotect(packets[n]) }
        #expect(call.unprotect(packets[1_040]).error == nil, "a jump of 17")
        #expect(call.unprotect(packets[1_030]).error == nil, "jumped over, still deliverable once")
        #expect(call.unprotect(packets[1_024]).error == nil)
        #expect(call.unprotect(packets[1_030]).error == .replayed)
        #expect(call.unprotect(packets[16]).error == .replayed, "pushed out of the window")
        #expect(call.unprotect(packets[17]).error == .replayed, "the window's oldest, already seen")
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func senderRepeatsAndOldIndices(_ profile: SRTPProtectionProfile) throws {
        let call = try Call(profile)
        let first = call.protect(rtpPacket(seq: 5, ssrc: 1, payload: 30))
        for seq in UInt16(6)...1_100 { _ = call.protect(rtpPacket(seq: seq, ssrc: 1, payload: 30)) }
        // A NACK retransmission inside the window protects to the same bytes as before.
        let again = call.protect(rtpPacket(seq: 100, ssrc: 1, payload: 30))
        let original = try Call(profile)
        for seq in UInt16(5)...100 where seq != 100 { _ = original.protect(rtpPacket(seq: seq, ssrc: 1, payload: 30)) }
        #expect(again == original.protect(rtpPacket(seq: 100, ssrc: 1, payload: 30)))
        // Further back than the window, both refuse to protect.
        let outcome = call.sender.both(rtpPacket(seq: 5, ssrc: 1, payload: 30)) { $0.protectRTP }
        #expect(outcome == .failed(.replayed, rtpPacket(seq: 5, ssrc: 1, payload: 30)))
        #expect(first.count == 12 + 30 + SRTPPacketCipher.tagLength(profile))
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func srtcpReplayWindow(_ profile: SRTPProtectionProfile) throws {
        let call = try Call(profile)
        let packets = (0..<300).map { _ in call.protect(rtcpPacket(ssrc: 0x5555), rtcp: true) }
        #expect(Array(packets[0].suffix(profile == .aeadAES128GCM ? 4 : 14).prefix(4)) == [0x80, 0, 0, 1],
                "E set, the first SRTCP index is 1")
        for n in stride(from: 299, through: 200, by: -1) {
            #expect(call.unprotect(packets[n], rtcp: true).error == nil)
        }
        #expect(call.unprotect(packets[172], rtcp: true).error == nil, "127 behind the newest: inside")
        #expect(call.unprotect(packets[171], rtcp: true).error == .replayed, "128 behind: outside")
        #expect(call.unprotect(packets[250], rtcp: true).error == .replayed)
        #expect(call.unprotect(packets[0], rtcp: true).error == .replayed)
    }

    /// The one deliberate difference from libsrtp2: receive state for at most 256 SSRCs, so an
    /// authenticated peer cycling SSRCs cannot grow it without bound. Known SSRCs keep working.
    @Test(arguments: SRTPProtectionProfile.allCases)
    func receiveStateIsBoundedInSSRCs(_ profile: SRTPProtectionProfile) throws {
        let length = profile.keyLength + profile.saltLength
        let a = [UInt8](repeating: 3, count: length), b = [UInt8](repeating: 4, count: length)
        let sender = try OpenSSLSRTPTransform(SRTPKeyingMaterial(profile: profile, local: a, remote: b))
        let receiver = try OpenSSLSRTPTransform(SRTPKeyingMaterial(profile: profile, local: b, remote: a))
        func send(_ ssrc: UInt32, seq: UInt16) throws(SRTPError) {
            var packet = rtpPacket(seq: seq, ssrc: ssrc, payload: 20)
            try sender.protectRTP(&packet)
            try receiver.unprotectRTP(&packet)
        }
        for ssrc in 1...UInt32(OpenSSLSRTPTransform.maximumReceivedSSRCs) { try send(ssrc, seq: 1) }
        #expect(throws: SRTPError.failed(code: 5)) { try send(100_000, seq: 1) }
        try send(1, seq: 2)
        try send(256, seq: 2)
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func srtcpIndexStopsBeforeWrapping(_ profile: SRTPProtectionProfile) throws {
        // libsrtp2 stops at index 2^31 − 1 with key_expired (15); reaching it there takes 2^31
        // packets, so only the OpenSSL transform is wound forward.
        let length = profile.keyLength + profile.saltLength
        let keys = SRTPKeyingMaterial(profile: profile, local: .init(repeating: 1, count: length),
                                      remote: .init(repeating: 2, count: length))
        let sender = try OpenSSLSRTPTransform(keys)
        sender.setLastSRTCPIndex(0x7FFF_FFFE, ssrc: 6)
        var last = rtcpPacket(ssrc: 6)
        try sender.protectRTCP(&last)
        #expect(Array(last.suffix(profile == .aeadAES128GCM ? 4 : 14).prefix(4)) == [0xFF, 0xFF, 0xFF, 0xFF])
        var next = rtcpPacket(ssrc: 6)
        #expect(throws: SRTPError.failed(code: 15)) { try sender.protectRTCP(&next) }
        #expect(next == rtcpPacket(ssrc: 6))
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func truncatedPacketsFailAlike(_ profile: SRTPProtectionProfile) throws {
        let call = try Call(profile)
        let rtp = call.protect(rtpPacket(seq: 10, ssrc: 3, payload: 24, csrcs: 1, extensionWords: 1))
        let rtcp = call.protect(rtcpPacket(ssrc: 3, blocks: 1), rtcp: true)
        // First with no state for the SSRC, then with state (the replay check comes first there).
        for _ in 0..<2 {
            for length in 0..<rtp.count { #expect(call.unprotect(Array(rtp.prefix(length))).error != nil) }
            for length in 0..<rtcp.count {
                #expect(call.unprotect(Array(rtcp.prefix(length)), rtcp: true).error != nil)
            }
            call.unprotect(call.protect(rtpPacket(seq: 9, ssrc: 3, payload: 1)))
            call.unprotect(call.protect(rtcpPacket(ssrc: 3, blocks: 0), rtcp: true), rtcp: true)
        }
        #expect(call.unprotect(Array(rtp.prefix(11))).error == .malformed)
        #expect(call.unprotect(rtp).error == nil)
        #expect(call.unprotect(rtcp, rtcp: true).error == nil, "index 1, never delivered whole")
        #expect(call.unprotect(rtcp, rtcp: true).error == .replayed)
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func corruptedPacketsFailAlike(_ profile: SRTPProtectionProfile) throws {
        let call = try Call(profile)
        let rtp = call.protect(rtpPacket(seq: 77, ssrc: 0x77, payload: 48))
        let rtcp = call.protect(rtcpPacket(ssrc: 0x77, blocks: 2), rtcp: true)
        for (packet, isRTCP) in [(rtp, false), (rtcp, true)] {
            for position in 0..<packet.count {
                for mask: UInt8 in [0x01, 0x80] {
                    var forged = packet
                    forged[position] ^= mask
                    let outcome = call.unprotect(forged, rtcp: isRTCP)
                    #expect(outcome.error != nil, "byte \(position) ^ \(mask) accepted")
                    // AES-CM checks the tag first; AEAD zeroes what it decrypted (as NSS does).
                    if profile == .aes128CMHMACSHA1_80, case .failed(_, let left) = outcome { #expect(left == forged) }
                }
            }
            #expect(call.unprotect(packet, rtcp: isRTCP).error == nil)
        }
        // AES-CM SRTCP must say it is encrypted; AEAD authenticates the E bit instead.
        var clear = call.protect(rtcpPacket(ssrc: 0x77), rtcp: true)
        clear[clear.count - (profile == .aeadAES128GCM ? 4 : 14)] &= 0x7F
        #expect(call.unprotect(clear, rtcp: true).error
            == (profile == .aeadAES128GCM ? .authenticationFailed : .failed(code: 14)))
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func malformedInputIsRefusedAlike(_ profile: SRTPProtectionProfile) throws {
        let call = try Call(profile)
        var tooManyCSRCs = rtpPacket(seq: 1, ssrc: 2, payload: 8)
        tooManyCSRCs[0] |= 0x0F
        var longExtension = rtpPacket(seq: 1, ssrc: 2, payload: 8, extensionWords: 1)
        longExtension[15] = 9
        for packet: [UInt8] in [[], [0x80], Array(repeating: 0x80, count: 11), tooManyCSRCs, longExtension] {
            #expect(call.sender.both(packet) { $0.protectRTP }.error == .malformed)
            #expect(call.receiver.both(packet) { $0.unprotectRTP }.error == .malformed)
        }
        for packet: [UInt8] in [[], Array(repeating: 0x80, count: 7)] {
            #expect(call.sender.both(packet) { $0.protectRTCP }.error == .malformed)
            #expect(call.receiver.both(packet) { $0.unprotectRTCP }.error == .malformed)
        }
        let huge = [UInt8](repeating: 0x80, count: 65_536)
        #expect(call.sender.both(huge) { $0.protectRTP }.error == .malformed)
        #expect(call.receiver.both(huge) { $0.unprotectRTCP }.error == .malformed)
        // A header past libsrtp2's (NSS) 2048-byte AEAD limit fails in both, as a cipher failure.
        let bigHeader = rtpPacket(seq: 3, ssrc: 2, payload: 8, extensionWords: 600)
        let expected: SRTPError? = profile == .aeadAES128GCM ? .failed(code: 8) : nil
        #expect(call.sender.both(bigHeader) { $0.protectRTP }.error == expected)
        #expect(call.receiver.both(bigHeader + [UInt8](repeating: 0, count: 16)) { $0.unprotectRTP }.error
            == expected ?? .authenticationFailed)
        // Same limit for unencrypted AEAD SRTCP, whose whole body is AAD (E = 0).
        let clearRTCP = rtcpPacket(ssrc: 4, blocks: 90) + [UInt8](repeating: 0, count: 16) + [0, 0, 0, 1]
        #expect(call.receiver.both(clearRTCP) { $0.unprotectRTCP }.error
            == (profile == .aeadAES128GCM ? .failed(code: 8) : .failed(code: 14)))
        // libsrtp2 computes AEAD lengths unsigned: shorter than the tag is a cipher failure there.
        let short = rtpPacket(seq: 4, ssrc: 2, payload: 2)
        #expect(call.receiver.both(short) { $0.unprotectRTP }.error
            == (profile == .aeadAES128GCM ? .failed(code: 8) : .malformed))
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func randomizedTrafficAgreesWithLibSRTP(_ profile: SRTPProtectionProfile) throws {
        var random = SplitMix64(seed: profile == .aeadAES128GCM ? 7 : 11)
        func roll(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }
        let call = try Call(profile, seed: 3)
        let ssrcs: [UInt32] = (0..<6).map { _ in UInt32.random(in: 0...UInt32.max, using: &random) }
        var nextSeq = ssrcs.map { _ in UInt16.random(in: 0...UInt16.max, using: &random) }
        var sent: [(packet: [UInt8], rtcp: Bool)] = []
        var accepted = 0, errors: [String: Int] = [:]
        for _ in 0..<4_000 {
            let k = roll(0...ssrcs.count - 1)
            let rtcp = roll(0...7) == 0
            var plain: [UInt8]
            if rtcp {
                plain = rtcpPacket(ssrc: ssrcs[k], blocks: roll(0...3))
            } else {
                // Mostly forward, sometimes a jump (up to most of the sequence space) or a step back.
                switch roll(0...19) {
                case 0: nextSeq[k] &+= UInt16(roll(0...40_000))
                case 1: nextSeq[k] &-= UInt16(roll(0...1_500))
                default: nextSeq[k] &+= 1
                }
                plain = rtpPacket(seq: nextSeq[k], ssrc: ssrcs[k], payload: roll(0...1_300), csrcs: roll(0...2),
                                  extensionWords: roll(0...1) == 0 ? roll(0...3) : nil)
            }
            if roll(0...49) == 0 { plain = Array(plain.prefix(roll(0...16))) }
            let outcome = call.sender.both(plain) { rtcp ? $0.protectRTCP : $0.protectRTP }
            if case .ok(let bytes) = outcome { sent.append((bytes, rtcp)) }
            // Deliver something: usually the newest, else an older one; sometimes damaged.
            guard !sent.isEmpty else { continue }
            var (packet, isRTCP) = sent[roll(0...3) == 0 ? roll(0...sent.count - 1) : sent.count - 1]
            switch roll(0...9) {
            case 0: packet = Array(packet.prefix(roll(0...packet.count)))
            case 1: packet[roll(0...packet.count - 1)] ^= UInt8(roll(1...255))
            default: break
            }
            if let error = call.unprotect(packet, rtcp: isRTCP).error {
                errors[error.reason, default: 0] += 1
            } else {
                accepted += 1
            }
        }
        // The mix really exercised acceptance and every kind of refusal.
        #expect(accepted > 1_000, "\(accepted) accepted")
        #expect(errors["srtp_replay", default: 0] > 100 && errors["srtp_auth", default: 0] > 100
            && errors["srtp_malformed", default: 0] > 10, "\(errors)")
    }
}
