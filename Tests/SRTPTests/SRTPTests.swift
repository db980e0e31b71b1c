import SRTP
import Testing

func hex(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

/// Expected packets come from an independent Python implementation (RFC 3711 KDF and AES-CM
/// checked against the RFC 3711 Appendix B.3 key-derivation vectors; AES-GCM packet layout
/// checked against RFC 7714 §16.1.1), fed the same master keys as libsrtp2 here.
@Suite("SRTP over libsrtp2 (known answers)")
struct SRTPTests {
    // RFC 3711 Appendix B.3 master key and salt.
    let masterKey = hex("E1F97A0D3E018BE0D64FA32C06DE4139")
    let masterSalt = hex("0EC675AD498AFEEBB6960B3AABE6")
    let gcmSalt = hex("517569642070726f2071756f")

    func pair(_ profile: SRTPProtectionProfile, _ key: [UInt8]) throws -> (LibSRTPTransform, LibSRTPTransform) {
        let other = [UInt8](repeating: 0x42, count: key.count)
        let a = try LibSRTPTransform(SRTPKeyingMaterial(profile: profile, local: key, remote: other))
        let b = try LibSRTPTransform(SRTPKeyingMaterial(profile: profile, local: other, remote: key))
        return (a, b)
    }

    @Test func aesCMHMACSHA1_80KnownAnswer() throws {
        let (sender, receiver) = try pair(.aes128CMHMACSHA1_80, masterKey + masterSalt)
        let plain = hex("800f1234decafbadcafebabe") + [UInt8](repeating: 0xab, count: 16)
        var packet = plain
        try sender.protectRTP(&packet)
        #expect(packet == hex("800f1234decafbadcafebabe4e55dc4ce79978d88ca4d215949d2402b78d6acc99ea179b8dbb"))
        try receiver.unprotectRTP(&packet)
        #expect(packet == plain)
    }

    @Test func aeadAES128GCMKnownAnswer() throws {
        let (sender, receiver) = try pair(.aeadAES128GCM, masterKey + gcmSalt)
        let plain = hex("8040f17b8041f8d35501a0b247616c6c696120657374206f6d6e69732064697669736120696e207061727465732074726573")
        var packet = plain
        try sender.protectRTP(&packet)
        #expect(packet == hex("8040f17b8041f8d35501a0b28747a4a13c6bbc2a26a5eef4a3009f000e18007077f105390b98ef2b1f31a35760c1fff2dfab745554e0e8a23ae3647b65b8e46fc98d"))
        try receiver.unprotectRTP(&packet)
        #expect(packet == plain)
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func tamperingAndReplayAreRejected(_ profile: SRTPProtectionProfile) throws {
        let key = [UInt8](repeating: 7, count: profile.keyLength + profile.saltLength)
        let (sender, receiver) = try pair(profile, key)
        var packet = hex("80600001000000640000beef") + [UInt8](repeating: 1, count: 160)
        try sender.protectRTP(&packet)
        var tampered = packet
        tampered[20] ^= 1
        #expect(throws: SRTPError.authenticationFailed) { try receiver.unprotectRTP(&tampered) }
        var first = packet
        try receiver.unprotectRTP(&first)
        var again = packet
        #expect(throws: SRTPError.replayed) { try receiver.unprotectRTP(&again) }
        var short: [UInt8] = [0x80, 0x60]
        #expect(throws: SRTPError.malformed) { try receiver.unprotectRTP(&short) }
    }

    @Test(arguments: SRTPProtectionProfile.allCases)
    func rtcpRoundTrip(_ profile: SRTPProtectionProfile) throws {
        let key = [UInt8](repeating: 9, count: profile.keyLength + profile.saltLength)
        let (sender, receiver) = try pair(profile, key)
        // Receiver report from SSRC 0x01020304 with no report blocks.
        let plain: [UInt8] = [0x80, 201, 0x00, 0x01, 0x01, 0x02, 0x03, 0x04]
        var packet = plain
        try sender.protectRTCP(&packet)
        #expect(packet.count > plain.count)
        try receiver.unprotectRTCP(&packet)
        #expect(packet == plain)
    }

    @Test func exportedMaterialIsSplitPerRFC5764() {
        let profile = SRTPProtectionProfile.aes128CMHMACSHA1_80
        let exported = (0..<60).map { UInt8($0) }
        let client = SRTPKeyingMaterial(profile: profile, exported: exported, isClient: true)!
        let server = SRTPKeyingMaterial(profile: profile, exported: exported, isClient: false)!
        #expect(client.local == Array(0..<16) + Array(32..<46))
        #expect(client.remote == Array(16..<32) + Array(46..<60))
        #expect(server.local == client.remote && server.remote == client.local)
        #expect(SRTPKeyingMaterial(profile: profile, exported: [1, 2, 3], isClient: true) == nil)
    }
}
