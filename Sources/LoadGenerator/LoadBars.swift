import Foundation

/// What a load run must meet to pass, beyond everyone joining and hearing audio: loss by both
/// measures (sequence gaps, and packets received against the stream's own timing, `WindowRate`),
/// the mouth-to-ear p95 (missed onsets counted at the deadline), and the share of the burst
/// talkers' onsets that the probes detected (less those they heard a second time). The
/// defaults are the capacity bar of docs/PERFORMANCE.md; a debug build under `make test` may be
/// given looser ones, said so.
public struct LoadBars: Codable, Sendable, Equatable {
    public var maxLossPercent = 0.5
    public var maxLatencyP95Ms = 400.0
    public var minOnsetsDetectedPercent = 99.5

    public init() {}

    /// The bars `results` misses, each named with its figure; empty when it meets them all.
    public func failures(_ results: LoadResults) -> [String] {
        var failed: [String] = []
        if results.audioLossPercent >= maxLossPercent {
            failed.append(String(format: "audio loss by sequence %.2f %% ≥ %.2f %%", results.audioLossPercent, maxLossPercent))
        }
        if let rate = results.audioRateLossPercent, rate >= maxLossPercent {
            failed.append(String(format: "audio received %.2f %% short of the streams' timing ≥ %.2f %%", rate, maxLossPercent))
        }
        if results.mouthToEar.count > 0, results.mouthToEar.p95 > maxLatencyP95Ms {
            failed.append(String(format: "mouth-to-ear p95 %.0f ms > %.0f ms", results.mouthToEar.p95, maxLatencyP95Ms))
        }
        if let sent = results.onsetsExpected, sent > 0, let detected = results.onsetsDetected {
            // An onset heard twice is an artifact: it counts against the bar as a missed one.
            let repeated = results.onsetsRepeated ?? 0
            let share = Double(detected - repeated) * 100 / Double(sent)
            if share < minOnsetsDetectedPercent {
                failed.append(String(format: "onsets detected %d of %d%@ (%.1f %%) < %.1f %%", detected, sent,
                                     repeated > 0 ? ", \(repeated) heard twice" : "", share, minOnsetsDetectedPercent))
            }
        }
        return failed
    }
}
