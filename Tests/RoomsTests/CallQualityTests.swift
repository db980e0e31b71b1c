import ChorusCore
@testable import Rooms
import Testing

/// The call-quality judge: thresholds with hysteresis, the silences, the per-call summary,
/// and the simplified E-model's MOS at known points.
@Suite("Call quality: warnings with hysteresis, MOS")
struct CallQualityTests {
    /// One second's sample after `received` and `lost` audio packets in all.
    func sample(received: Int, lost: Int, jitter: Double = 5, rtt: Double? = 40, sinceAudio: Double? = 0.02)
        -> CallQuality.Sample
    {
        CallQuality.Sample(packetsReceived: received, packetsLost: lost, jitterMs: jitter, roundTripMs: rtt,
                           jitterBufferDelayMs: 40, secondsSinceAudio: sinceAudio, expectsAudio: true,
                           secondsSinceVideo: nil)
    }

    @Test func lossRaisesOnceAndRecoversAfterThreeCleanSeconds() {
        var quality = CallQuality()
        var received = 0, lost = 0
        var log: [(Int, CallQuality.Change)] = []
        // 5 s clean, 6 s at 15 % loss, 4 s at 4 % (between the thresholds: stays raised), 5 s clean.
        for second in 1...20 {
            let lossRate = second <= 5 ? 0 : second <= 11 ? 15 : second <= 15 ? 4 : 0
            lost += lossRate * 50 / 100
            received += 50 - lossRate * 50 / 100
            for change in quality.evaluate(sample(received: received, lost: lost)) { log.append((second, change)) }
        }
        #expect(log.count == 2, "\(log)")
        guard log.count == 2, case .raised(.highPacketLoss, let value, 5) = log[0].1,
              case .recovered(.highPacketLoss, let after) = log[1].1
        else { Issue.record("\(log)"); return }
        #expect(log[0].0 == 6 && value >= 5)  // half the window lossy already
        #expect(log[1].0 >= 18 && after >= 12, "\(log)")
        #expect(quality.counts[.highPacketLoss] == 1 && (quality.activeSeconds[.highPacketLoss] ?? 0) >= 11)
    }

    @Test func silenceJitterAndRoundTripWarnings() {
        var quality = CallQuality()
        var raised: [CallQuality.Warning] = []
        for second in 1...6 {
            let changes = quality.evaluate(sample(received: 50 * second, lost: 0, jitter: 60, rtt: 450,
                                                  sinceAudio: second > 2 ? Double(second - 2) : 0.02))
            for case .raised(let warning, _, _) in changes { raised.append(warning) }
        }
        #expect(raised == [.highJitter, .highRtt, .noAudioReceived])
        let summary = quality.summary
        #expect(summary.warnings.keys.sorted() == ["highJitter", "highRtt", "noAudioReceived"])
        #expect(summary.warnings["highJitter"]?.count == 1)
        #expect(summary.mosMin != nil)
    }

    /// The loss a participant's receiver reports of the mix we send it is judged apart from the
    /// loss of what it sends us, and told as highPacketLoss with direction downlink.
    @Test func downlinkLossIsItsOwnWarning() {
        var quality = CallQuality()
        var changes: [CallQuality.Change] = []
        for second in 1...12 {
            var next = sample(received: 50 * second, lost: 0)
            next.downlinkLossPercent = second <= 5 ? 12 : 0
            changes += quality.evaluate(next)
        }
        #expect(changes.count == 2, "\(changes)")
        guard case .raised(let raised, _, _)? = changes.first, case .recovered(let recovered, _)? = changes.last else {
            Issue.record("\(changes)")
            return
        }
        #expect(raised == .highDownlinkLoss && recovered == .highDownlinkLoss)
        #expect(raised.name == ("highPacketLoss", "downlink") && CallQuality.Warning.highPacketLoss.name.direction == "uplink")
    }

    @Test func eModelMOSAtKnownPoints() {
        // No loss, short delay: R ≈ 92.7, MOS ≈ 4.4 (G.107's best narrowband case).
        #expect(abs(EModel.mos(oneWayDelayMs: 20, packetLossPercent: 0) - 4.4) < 0.05)
        // Loss and delay lower it, monotonically.
        let lossy = EModel.mos(oneWayDelayMs: 20, packetLossPercent: 15)
        #expect(lossy < 3.5 && lossy > 2.0)
        #expect(EModel.mos(oneWayDelayMs: 400, packetLossPercent: 0) < EModel.mos(oneWayDelayMs: 100, packetLossPercent: 0))
        #expect(EModel.mos(oneWayDelayMs: 2_000, packetLossPercent: 90) == 1)
    }
}
