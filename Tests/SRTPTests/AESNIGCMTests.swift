@testable import SRTP
import ChorusCore
import Foundation
import Testing

/// `SRTPPacketCipher`'s AEAD_AES_128_GCM on `CAESGCM` (AES-NI under OpenSSL's GCM mode) against
/// the same cipher on EVP: byte-identical seals, each opens the other's packets, and a forgery
/// is refused with its plaintext wiped. The RFC 7714 vectors and the libsrtp2 comparison in
/// OpenSSLSRTPTransformTests run on whichever path this CPU takes; this suite pins both.
@Suite("SRTP AEAD on AES-NI against EVP")
struct AESNIGCMTests {
    let keys: SRTPSessionKeys

    init() throws {
        let master = (0..<28).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 5) }
        keys = try SRTPSessionKeys(profile: .aeadAES128GCM, master: master)
    }

    /// The CPU flags the kernel reports: the fast path must be taken wherever it can be, or its
    /// gain silently disappears.
    @Test func theFastPathIsTakenWhereTheCPUHasIt() throws {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let flags = Set(cpuinfo.split(separator: "\n").first { $0.hasPrefix("flags") }?
            .split(separator: " ").map(String.init) ?? [])
        #if arch(x86_64)
        let expected = flags.isSuperset(of: ["aes", "pclmulqdq", "sse4_1"])
        #else
        let expected = false
        #endif
        #expect(SRTPPacketCipher.usesAESNI == expected, "flags: aes \(flags.contains("aes"))")
    }

    /// Every payload length 0...130 (all partial-block and four-block-group boundaries), then
    /// large ones, over RTP with headers of 12–40 bytes.
    @Test(.enabled(if: SRTPPacketCipher.usesAESNI)) func rtpSealsMatchEVPAndOpenEitherWay() throws {
        let fastSeal = try SRTPPacketCipher(keys, seals: true)
        let evpSeal = try SRTPPacketCipher(keys, seals: true, allowsAESNI: false)
        let fastOpen = try SRTPPacketCipher(keys, seals: false)
        let evpOpen = try SRTPPacketCipher(keys, seals: false, allowsAESNI: false)
        let lengths = Array(0...130) + [255, 256, 257, 1_000, 1_184, 1_200]
        for (n, payload) in lengths.enumerated() {
            let header = 12 + 4 * (n % 8)
            let plain = (0..<(header + payload)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ n) }
            let index = UInt64(n) * 70_001
            let fast = seal(fastSeal, plain, header: header, index: index)
            let evp = seal(evpSeal, plain, header: header, index: index)
            #expect(fast == evp, "payload \(payload)")
            #expect(open(fastOpen, evp, header: header, index: index) == (.opened, plain), "payload \(payload)")
            #expect(open(evpOpen, fast, header: header, index: index) == (.opened, plain), "payload \(payload)")
        }
    }

    @Test(.enabled(if: SRTPPacketCipher.usesAESNI)) func aForgeryIsRefusedAndItsPlaintextWiped() throws {
        let sealer = try SRTPPacketCipher(keys, seals: true)
        let opener = try SRTPPacketCipher(keys, seals: false)
        let plain = (0..<112).map { UInt8(truncatingIfNeeded: $0 &+ 1) }
        let good = seal(sealer, plain, header: 12, index: 9)
        for position in [0, 5, 12, 60, good.count - 1] {  // header (AAD), payload, tag
            var forged = good
            forged[position] ^= 0x40
            let (result, bytes) = open(opener, forged, header: 12, index: 9)
            #expect(result == .authenticationFailed, "byte \(position)")
            #expect(bytes[12...].allSatisfy { $0 == 0 }, "byte \(position): no unauthenticated plaintext")
        }
        #expect(open(opener, good, header: 12, index: 10).result == .authenticationFailed, "wrong index")
        #expect(open(opener, good, header: 12, index: 9) == (.opened, plain))
    }

    /// SRTCP: the E‖index word is AAD after the header; E = 0 authenticates the whole packet.
    @Test(.enabled(if: SRTPPacketCipher.usesAESNI)) func rtcpSealsMatchEVPBothWays() throws {
        let fastSeal = try SRTPPacketCipher(keys, seals: true)
        let evpSeal = try SRTPPacketCipher(keys, seals: true, allowsAESNI: false)
        let fastOpen = try SRTPPacketCipher(keys, seals: false)
        for length in [8, 9, 24, 32, 33, 56, 57, 200] {
            let plain = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
            var fast = plain + [UInt8](repeating: 0, count: 20), evp = fast
            let index = UInt32(length) * 1_001
            #expect(fast.withUnsafeMutableBytes {
                fastSeal.sealRTCP($0.baseAddress!, length: length, ssrc: 0xCAFE, index: index)
            })
            #expect(evp.withUnsafeMutableBytes {
                evpSeal.sealRTCP($0.baseAddress!, length: length, ssrc: 0xCAFE, index: index)
            })
            #expect(fast == evp, "length \(length)")
            let result = evp.withUnsafeMutableBytes {
                fastOpen.openRTCP($0.baseAddress!, length: length + 20, ssrc: 0xCAFE, index: index, encrypted: true)
            }
            #expect(result == .opened && Array(evp.prefix(length)) == plain, "length \(length)")
        }
    }

    private func seal(_ cipher: SRTPPacketCipher, _ plain: [UInt8], header: Int, index: UInt64) -> [UInt8] {
        var packet = plain + [UInt8](repeating: 0, count: 16)
        let ok = packet.withUnsafeMutableBytes {
            cipher.sealRTP($0.baseAddress!, length: plain.count, headerLength: header, ssrc: 0x1234_5678, index: index)
        }
        #expect(ok)
        return packet
    }

    private func open(_ cipher: SRTPPacketCipher, _ sealed: [UInt8], header: Int, index: UInt64)
        -> (result: SRTPOpenResult, bytes: [UInt8])
    {
        var packet = sealed
        let result = packet.withUnsafeMutableBytes {
            cipher.openRTP($0.baseAddress!, length: sealed.count, headerLength: header, ssrc: 0x1234_5678, index: index)
        }
        return (result, Array(packet.dropLast(16)))
    }
}
