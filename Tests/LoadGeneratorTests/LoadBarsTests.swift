import ChorusCore
import Foundation
import Testing

@testable import LoadGenerator

/// The load tool cannot be fooled (issue 18, item 2): a server that falls behind shows as loss
/// even with continuous sequence numbers, silences the server chose do not, and a run passes only
/// when every bar is met, saying which one failed otherwise.
@Suite("Load bars and the window rate")
struct LoadBarsTests {
    /// `count` packets of consecutive frames, `spacingMs` apart on the wall clock.
    func stream(_ rate: inout WindowRate, count: Int, spacingMs: Double, startMs: Double = 0, timestamp: UInt32 = 0,
                markerFirst: Bool = false) {
        for index in 0..<count {
            let wall = MediaTime(nanoseconds: UInt64((startMs + Double(index) * spacingMs) * 1e6) + 1_000_000_000)
            rate.received(timestamp: timestamp &+ UInt32(index * 960), marker: markerFirst && index == 0, at: wall)
        }
    }

    @Test func aHealthyStreamIsNotShort() {
        var rate = WindowRate()
        stream(&rate, count: 500, spacingMs: 20)
        #expect(rate.received == 500)
        #expect(abs(rate.expected - 500) < 0.5)
    }

    @Test func aServerFallingBehindIsShortWithContinuousSequenceNumbers() {
        // 21 packets a second where the stream's clock says 50: each frame arrives 47.6 ms apart.
        var rate = WindowRate()
        stream(&rate, count: 210, spacingMs: 1000.0 / 21)
        let short = 1 - Double(rate.received) / rate.expected
        #expect(short > 0.5 && short < 0.6, "short \(short)")
    }

    @Test func aChosenSilenceIsNotLossButAGapWithoutMarkerIs() {
        var quiet = WindowRate()
        stream(&quiet, count: 100, spacingMs: 20)
        // One second of silence (timestamps jump 50 frames), then a talk spurt with its marker.
        stream(&quiet, count: 100, spacingMs: 20, startMs: 3000, timestamp: UInt32(150 * 960), markerFirst: true)
        #expect(abs(quiet.expected - 200) < 1)

        var lossy = WindowRate()
        stream(&lossy, count: 100, spacingMs: 20)
        stream(&lossy, count: 100, spacingMs: 20, startMs: 3000, timestamp: UInt32(150 * 960))
        #expect(lossy.expected > 240)
    }

    @Test func barsNameWhatFailed() {
        var results = LoadReportTests.results(passed: true)
        results.audioLossPercent = 0.1
        results.audioRateLossPercent = 3
        results.onsetsExpected = 200
        results.onsetsDetected = 190
        results.mouthToEar = .init(Array(repeating: 80, count: 90) + Array(repeating: 1_000, count: 10))
        let failed = LoadBars().failures(results)
        #expect(failed.count == 3, "\(failed)")
        #expect(failed.contains { $0.hasPrefix("audio received 3.00 %") })
        #expect(failed.contains { $0.hasPrefix("mouth-to-ear p95 1000 ms") })
        #expect(failed.contains { $0.hasPrefix("onsets detected 190 of 200") })
        results.audioRateLossPercent = 0
        results.onsetsDetected = 200
        results.mouthToEar = .init([80, 90, 100])
        #expect(LoadBars().failures(results).isEmpty)
        // A burst heard a second time is an artifact, not a latency: it counts as a missed onset.
        results.onsetsRepeated = 2
        #expect(LoadBars().failures(results) == ["onsets detected 200 of 200, 2 heard twice (99.0 %) < 99.5 %"])
        // The summary says how long the tone was gone before each came back: a timestamp jump
        // (a hole in the stream only) and a mix without the tone (a hole in both).
        #expect(!LoadReport.summaryRows(results).contains { $0.label.hasPrefix("Holes") })
        results.repeatedOnsetHoles = [.init(streamMs: 220, arrivalMs: 15.4), .init(streamMs: 240, arrivalMs: 238)]
        #expect(LoadReport.summaryRows(results).contains { $0 == ("Holes before them, stream/arrival", "220/15, 240/238 ms") })
    }
}
