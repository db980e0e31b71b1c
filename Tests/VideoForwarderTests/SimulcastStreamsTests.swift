import ChorusCore
import RTP
import Testing
import VideoForwarder

/// SSRC → layer learning from the RID header extensions (RFC 8852) the way browsers send them:
/// Chromium's RID only on the first packets, RTX with the repaired RID, Firefox's on every
/// packet; and the hostile cases, each refused and counted.
@Suite("VideoForwarder: simulcast streams")
struct SimulcastStreamsTests {
    /// Chromium's IDs in its offer (10 rtp-stream-id, 11 repaired-rtp-stream-id).
    static let ridID: UInt8 = 10
    static let repairedID: UInt8 = 11

    func streams(_ rids: [String] = ["q", "h", "f"]) -> SimulcastStreams {
        SimulcastStreams(rids: rids, rtpStreamIDExtension: Self.ridID, repairedRTPStreamIDExtension: Self.repairedID)
    }

    /// A packet's extension block in the two-byte form (RFC 8285 §4.3), so IDs above 14 work.
    func extensions(_ elements: [(UInt8, [UInt8])]) -> RTPHeaderExtensions {
        var data: [UInt8] = []
        for (id, bytes) in elements { data += [id, UInt8(bytes.count)] + bytes }
        while data.count % 4 != 0 { data.append(0) }
        return RTPHeaderExtensions(profile: 0x1000, data: data[...])
    }

    func rid(_ text: String) -> [(UInt8, [UInt8])] { [(Self.ridID, Array(text.utf8))] }
    func repaired(_ text: String) -> [(UInt8, [UInt8])] { [(Self.repairedID, Array(text.utf8))] }

    @Test func chromiumSendsTheRIDFirstThenNothing() {
        var streams = streams()
        let ssrcs = [SSRC(0x1111), SSRC(0x2222), SSRC(0x3333)]
        var now = MediaTime.seconds(1)
        for (layer, ssrc) in ssrcs.enumerated() {
            for _ in 0..<3 {
                #expect(streams.received(ssrc: ssrc, extensions: extensions(rid(streams.rids[layer])), bytes: 1_000,
                                         now: now) == .media(layer: layer))
            }
        }
        // The receiver report acknowledged the SSRCs: no extension from here on.
        for _ in 0..<100 {
            now = now.adding(milliseconds: 10)
            for (layer, ssrc) in ssrcs.enumerated() {
                #expect(streams.received(ssrc: ssrc, extensions: extensions([]), bytes: 1_000, now: now) == .media(layer: layer))
            }
        }
        #expect(streams.mediaSSRC(layer: 0) == ssrcs[0] && streams.mediaSSRC(layer: 2) == ssrcs[2])
        #expect(streams.stream(of: ssrcs[1]) == .media(layer: 1))
        #expect(streams.stream(of: SSRC(9)) == nil)
        #expect(streams.refusals.total == 0)
    }

    @Test func withoutAnyExtensionNothingIsLearned() {
        var streams = streams()
        for sequence in 0..<10 {
            #expect(streams.received(ssrc: SSRC(UInt32(sequence % 3)), extensions: extensions([]), bytes: 100,
                                     now: .seconds(1)) == .refused(.unlearnedSSRC))
        }
        #expect(streams.refusals.unlearnedSSRC == 10)
        #expect((0..<3).allSatisfy { streams.mediaSSRC(layer: $0) == nil })
        // Without negotiated IDs, the extensions are not even looked at.
        var unnegotiated = SimulcastStreams(rids: ["q"], rtpStreamIDExtension: nil, repairedRTPStreamIDExtension: nil)
        #expect(unnegotiated.received(ssrc: SSRC(1), extensions: extensions(rid("q")), bytes: 100, now: .seconds(1))
                == .refused(.unlearnedSSRC))
    }

    /// RTX packets carry the repaired RID: the RTX SSRC maps to the layer it repairs, and stays
    /// mapped without the extension. Its bytes are not the layer's bitrate.
    @Test func retransmissionsMapToTheLayerTheyRepair() {
        var streams = streams()
        let now = MediaTime.seconds(5)
        #expect(streams.received(ssrc: SSRC(20), extensions: extensions(rid("h")), bytes: 1_000, now: now) == .media(layer: 1))
        #expect(streams.received(ssrc: SSRC(21), extensions: extensions(repaired("h")), bytes: 1_000, now: now)
                == .repair(layer: 1))
        #expect(streams.received(ssrc: SSRC(21), extensions: extensions([]), bytes: 1_000, now: now) == .repair(layer: 1))
        // An RTX stream may carry a RID of its own next to the repaired one: the repaired decides.
        #expect(streams.received(ssrc: SSRC(31), extensions: extensions(rid("zz") + repaired("f")), bytes: 1_000, now: now)
                == .repair(layer: 2))
        #expect(streams.repairSSRC(layer: 1) == SSRC(21) && streams.repairSSRC(layer: 2) == SSRC(31))
        #expect(streams.mediaSSRC(layer: 2) == nil)
        #expect(streams.stream(of: SSRC(21)) == .repair(layer: 1))
        #expect(streams.bitrate(layer: 1, now: now) > 0)
        #expect(streams.bitrate(layer: 2, now: now) == 0, "RTX bytes are not the layer's bitrate")
    }

    /// Firefox's IDs (9 and 10) and its packets, which keep the RID: same result.
    @Test func firefoxKeepsTheRID() {
        var streams = SimulcastStreams(rids: ["q", "h", "f"], rtpStreamIDExtension: 9, repairedRTPStreamIDExtension: 10)
        for round in 0..<50 {
            let now = MediaTime.milliseconds(UInt64(1_000 + 33 * round))
            for (layer, rid) in ["q", "h", "f"].enumerated() {
                let ssrc = SSRC(UInt32(4_000_000_000 + layer))
                #expect(streams.received(ssrc: ssrc, extensions: extensions([(3, [0x31]), (9, Array(rid.utf8))]),
                                         bytes: 500, now: now) == .media(layer: layer))
            }
        }
        #expect(streams.refusals.total == 0)
    }

    /// RIDs the offer did not name, on new and on learned SSRCs.
    @Test func unknownRIDsAreRefused() {
        var streams = streams()
        #expect(streams.received(ssrc: SSRC(1), extensions: extensions(rid("x")), bytes: 100, now: .seconds(1))
                == .refused(.unknownRID))
        #expect(streams.received(ssrc: SSRC(1), extensions: extensions(repaired("qq")), bytes: 100, now: .seconds(1))
                == .refused(.unknownRID))
        #expect(streams.received(ssrc: SSRC(2), extensions: extensions(rid("q")), bytes: 100, now: .seconds(1))
                == .media(layer: 0))
        // A prefix, a longer name, other case: no match.
        for name in ["", "Q", "qq", "q\u{0}x", "f-"] where !name.isEmpty {
            #expect(streams.received(ssrc: SSRC(2), extensions: extensions(rid(name)), bytes: 100, now: .seconds(1))
                    == .refused(.unknownRID))
        }
        #expect(streams.refusals.unknownRID == 6)
        #expect(streams.mediaSSRC(layer: 0) == SSRC(2))
        // A RID padded with zero bytes (as some senders do) is the RID.
        #expect(streams.received(ssrc: SSRC(2), extensions: extensions([(Self.ridID, [0x71, 0, 0])]), bytes: 100,
                                 now: .seconds(1)) == .media(layer: 0))
        // An all-zero element is no RID at all.
        #expect(streams.received(ssrc: SSRC(3), extensions: extensions([(Self.ridID, [0, 0])]), bytes: 100,
                                 now: .seconds(1)) == .refused(.unlearnedSSRC))
    }

    /// A RID on a new SSRC when its layer's stream already has a live SSRC; replaced only after
    /// the old one has been silent for `replaceAfter`.
    @Test func aSecondSSRCForALayerIsRefusedWhileTheFirstLives() {
        var streams = streams()
        #expect(streams.received(ssrc: SSRC(1), extensions: extensions(rid("q")), bytes: 100, now: .seconds(1))
                == .media(layer: 0))
        #expect(streams.received(ssrc: SSRC(2), extensions: extensions(rid("q")), bytes: 100, now: .milliseconds(2_500))
                == .refused(.layerTaken))
        #expect(streams.received(ssrc: SSRC(1), extensions: extensions([]), bytes: 100, now: .seconds(2)) == .media(layer: 0))
        #expect(streams.received(ssrc: SSRC(2), extensions: extensions(rid("q")), bytes: 100, now: .milliseconds(3_999))
                == .refused(.layerTaken))
        // SSRC 1 silent since 2 s: at 4 s the new SSRC takes the layer over.
        #expect(streams.received(ssrc: SSRC(2), extensions: extensions(rid("q")), bytes: 100, now: .seconds(4))
                == .media(layer: 0))
        #expect(streams.mediaSSRC(layer: 0) == SSRC(2))
        #expect(streams.received(ssrc: SSRC(1), extensions: extensions([]), bytes: 100, now: .seconds(4))
                == .refused(.unlearnedSSRC))
        #expect(streams.refusals.layerTaken == 2)
    }

    /// Decision: the first mapping stays; a packet claiming another layer, or repair for media,
    /// is refused and counted.
    @Test func anSSRCThatChangesItsRIDKeepsItsLayer() {
        var streams = streams()
        #expect(streams.received(ssrc: SSRC(7), extensions: extensions(rid("h")), bytes: 100, now: .seconds(1))
                == .media(layer: 1))
        #expect(streams.received(ssrc: SSRC(7), extensions: extensions(rid("f")), bytes: 100, now: .seconds(1))
                == .refused(.ridChanged))
        #expect(streams.received(ssrc: SSRC(7), extensions: extensions(repaired("h")), bytes: 100, now: .seconds(1))
                == .refused(.ridChanged))
        #expect(streams.received(ssrc: SSRC(7), extensions: extensions([]), bytes: 100, now: .seconds(1)) == .media(layer: 1))
        #expect(streams.mediaSSRC(layer: 2) == nil && streams.repairSSRC(layer: 1) == nil)
        #expect(streams.refusals.ridChanged == 2)
    }

    /// Thousands of SSRCs with valid RIDs: the tables stay at 3 layers × (media, RTX).
    @Test func theTablesAreBounded() {
        var streams = streams()
        var generator = SplitMix64(seed: 11)
        var learned = Set<SSRC>()
        for index in 0..<5_000 {
            let ssrc = SSRC(UInt32(truncatingIfNeeded: generator.next()))
            let name = ["q", "h", "f"][index % 3]
            let elements = index % 2 == 0 ? rid(name) : repaired(name)
            // One instant: the first six SSRCs stay alive, so none may be replaced.
            switch streams.received(ssrc: ssrc, extensions: extensions(elements), bytes: 1_200, now: .seconds(1)) {
            case .media, .repair: learned.insert(ssrc)
            case .refused(let reason): #expect(reason == .layerTaken)
            }
        }
        #expect(learned.count == 6)
        #expect(streams.refusals.layerTaken == 5_000 - 6)
        // More RIDs than layers: only the first three are layers.
        let many = SimulcastStreams(rids: ["a", "b", "c", "d", "e"], rtpStreamIDExtension: 1, repairedRTPStreamIDExtension: 2)
        #expect(many.layerCount == SimulcastStreams.maximumLayers && many.rids == ["a", "b", "c"])
        #expect(many.mediaSSRC(layer: 3) == nil && many.repairSSRC(layer: -1) == nil)
        #expect(many.bitrate(layer: 7, now: .seconds(1)) == 0 && many.bitrate(layer: -1, now: .seconds(1)) == 0)
    }

    /// Random packets (any SSRC from a small set, any RID bytes, either extension, time jumping
    /// both ways): never a trap, never more than one SSRC per stream, refusals add up.
    @Test func randomPacketsKeepTheInvariants() {
        var streams = streams()
        var generator = SplitMix64(seed: 3)
        var accepted: UInt64 = 0
        let names: [[UInt8]] = [[0x71], [0x68], [0x66], [0x78], [], [0, 0], Array(repeating: 0x66, count: 16)]
        for _ in 0..<20_000 {
            let value = generator.next()
            let ssrc = SSRC(UInt32(value & 0xF))
            let name = names[Int((value >> 8) % UInt64(names.count))]
            var elements: [(UInt8, [UInt8])] = []
            if value & 0x10 != 0, !name.isEmpty { elements.append((Self.ridID, name)) }
            if value & 0x20 != 0, !name.isEmpty { elements.append((Self.repairedID, name)) }
            let now = MediaTime(nanoseconds: (value >> 20) % 10_000_000_000)
            if case .refused = streams.received(ssrc: ssrc, extensions: extensions(elements), bytes: Int((value >> 40) & 0x7FF) - 100,
                                                now: now) {
                continue
            }
            accepted += 1
        }
        #expect(accepted + streams.refusals.total == 20_000)
        let ssrcs = (0..<3).flatMap { [streams.mediaSSRC(layer: $0), streams.repairSSRC(layer: $0)] }.compactMap { $0 }
        #expect(Set(ssrcs).count == ssrcs.count)
        for layer in 0..<3 { _ = streams.bitrate(layer: layer, now: .seconds(10)) }
    }

    /// Each layer's bitrate from its own packets, on a simulated clock: 1 Mbit/s, 300 kbit/s and
    /// 100 kbit/s arriving in 10 ms steps; 0 a window after a layer stops.
    @Test func eachLayerIsMeasured() {
        var streams = streams()
        let rates: [UInt64] = [100_000, 300_000, 1_000_000]  // q, h, f: bits per second
        var now = MediaTime.seconds(100)
        for step in 0..<300 {  // 3 s
            now = now.adding(milliseconds: 10)
            for (layer, rate) in rates.enumerated() where !(layer == 2 && step >= 200) {
                let bytes = Int(rate / 8 / 100)  // per 10 ms
                let elements = step == 0 ? rid(streams.rids[layer]) : []
                #expect(streams.received(ssrc: SSRC(UInt32(layer + 1)), extensions: extensions(elements), bytes: bytes,
                                         now: now) == .media(layer: layer))
            }
            if step == 150 {
                for (layer, rate) in rates.enumerated() {
                    let measured = Double(streams.bitrate(layer: layer, now: now))
                    #expect(abs(measured - Double(rate)) <= 0.02 * Double(rate), "layer \(layer): \(measured)")
                }
            }
        }
        #expect(streams.bitrate(layer: 2, now: now) == 0, "stopped a second ago")
        let measured = Double(streams.bitrate(layer: 1, now: now))
        #expect(abs(measured - 300_000) <= 6_000)
        #expect(streams.bitrate(layer: 0, now: now.adding(milliseconds: 1_001)) == 0)
    }
}
