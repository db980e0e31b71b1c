import ChorusCore
import Testing
import VideoForwarder

/// Proves the NACK cache returns a packet only for its own sequence number and within its age.
@Suite("PacketCache: a publisher's recent packets by sequence number, for NACKs")
struct PacketCacheTests {
    private func bytes(_ seq: UInt16, _ tag: UInt8 = 0) -> [UInt8] { [0x80, 0x60, UInt8(seq >> 8), UInt8(seq & 0xFF), tag] }

    /// An inserted packet is returned for its sequence number and no other.
    @Test func insertAndLookUp() {
        var cache = PacketCache()
        cache.insert(bytes(7), sequenceNumber: 7, arrival: ms(10))
        cache.insert(bytes(8), sequenceNumber: 8, arrival: ms(11))
        #expect(cache.packet(7, now: ms(20)) == bytes(7))
        #expect(cache.packet(8, now: ms(20)) == bytes(8))
        #expect(cache.packet(9, now: ms(20)) == nil)
        #expect(cache.packet(6, now: ms(20)) == nil)
        // The same sequence number again (a duplicate) replaces the entry.
        cache.insert(bytes(7, 0xEE), sequenceNumber: 7, arrival: ms(30))
        #expect(cache.packet(7, now: ms(40)) == bytes(7, 0xEE))
    }

    /// A packet is returned up to `maximumAge` after its arrival, inclusive, and not after.
    @Test(arguments: [UInt64(1_000), 50])
    func ageLimit(milliseconds: UInt64) {
        var cache = milliseconds == 1_000 ? PacketCache() : PacketCache(maximumAgeMilliseconds: milliseconds)
        #expect(cache.maximumAge == milliseconds * 1_000_000)
        let arrival = ms(5_000)
        cache.insert(bytes(1), sequenceNumber: 1, arrival: arrival)
        #expect(cache.packet(1, now: arrival.adding(milliseconds: milliseconds)) == bytes(1))
        #expect(cache.packet(1, now: arrival.adding(milliseconds: milliseconds).adding(nanoseconds: 1)) == nil)
        #expect(cache.packet(1, now: ms(4_000)) == bytes(1), "a clock reading before the arrival is age 0")
    }

    /// Sequence numbers `s` and `s + capacity` share a ring slot: whichever was inserted last
    /// is returned for its own number, and the other one is never returned in its place, also
    /// across the 16-bit wrap (65535 and 1023).
    @Test(arguments: [(UInt16(100), UInt16(1_124)), (65_535, 1_023), (0, 64_512)])
    func collisionsNeverReturnTheWrongPacket(older: UInt16, newer: UInt16) {
        var cache = PacketCache(capacity: 1_024)
        cache.insert(bytes(older), sequenceNumber: older, arrival: ms(0))
        cache.insert(bytes(newer), sequenceNumber: newer, arrival: ms(1))
        #expect(cache.packet(newer, now: ms(2)) == bytes(newer))
        #expect(cache.packet(older, now: ms(2)) == nil)
        // The late insert of the older one takes the slot back.
        cache.insert(bytes(older), sequenceNumber: older, arrival: ms(3))
        #expect(cache.packet(older, now: ms(4)) == bytes(older))
        #expect(cache.packet(newer, now: ms(4)) == nil)
    }

    /// Capacity is rounded up to a power of two (1000 → 1024, 0 → 2): 100 and 1100 both stay,
    /// 100 and 1124 collide.
    @Test func capacityRoundsUpToAPowerOfTwo() {
        var cache = PacketCache(capacity: 1_000)
        for seq: UInt16 in [100, 1_100] { cache.insert(bytes(seq), sequenceNumber: seq, arrival: ms(0)) }
        #expect(cache.packet(100, now: ms(1)) == bytes(100))
        #expect(cache.packet(1_100, now: ms(1)) == bytes(1_100))
        cache.insert(bytes(1_124), sequenceNumber: 1_124, arrival: ms(0))
        #expect(cache.packet(100, now: ms(1)) == nil)

        var tiny = PacketCache(capacity: 0)
        for seq: UInt16 in [0, 1] { tiny.insert(bytes(seq), sequenceNumber: seq, arrival: ms(0)) }
        #expect(tiny.packet(0, now: ms(0)) == bytes(0) && tiny.packet(1, now: ms(0)) == bytes(1))
        tiny.insert(bytes(2), sequenceNumber: 2, arrival: ms(0))
        #expect(tiny.packet(0, now: ms(0)) == nil && tiny.packet(2, now: ms(0)) == bytes(2))
    }

    /// A second of continuous traffic across the wrap: every packet of the last 1024 is there
    /// with its own bytes, the one before is gone.
    @Test func continuousTrafficAcrossTheWrap() {
        var cache = PacketCache()
        let first: UInt16 = 65_000
        for index in 0..<2_000 {
            let seq = first &+ UInt16(index)
            cache.insert(bytes(seq, UInt8(index & 0xFF)), sequenceNumber: seq, arrival: ms(UInt64(index / 2)))
        }
        let now = ms(1_000)
        for index in 976..<2_000 {
            let seq = first &+ UInt16(index)
            #expect(cache.packet(seq, now: now) == bytes(seq, UInt8(index & 0xFF)))
        }
        #expect(cache.packet(first &+ 975, now: now) == nil)
        #expect(cache.packet(first, now: now) == nil)
    }
}
