import ChorusCore
import Foundation

/// One participant's call quality, judged once a second from what the room measures: the
/// loss of its incoming audio over the last `window` seconds (uplink) and the loss its own
/// receiver reports of the mix we send it (downlink, RTCP RR), the jitter its jitter buffer
/// sees, the round-trip time from RTCP, and whether its audio or camera stopped. Each kind of
/// warning has a trigger and a (stricter) recover threshold and must stay recovered for
/// `recoverSeconds` before it is called recovered (hysteresis: a link at the threshold does
/// not flap). Also an estimated MOS per second (`EModel`), and the per-call summary the call
/// record keeps. Driven by `QualityMonitor`; a sans-IO value.
struct CallQuality {
    enum Warning: String, CaseIterable, Sendable {
        case highPacketLoss, highDownlinkLoss, highJitter, highRtt, noAudioReceived, videoFrozen

        /// The name told to applications, and the direction it concerns.
        var name: (warning: String, direction: String) {
            switch self {
            case .highDownlinkLoss: ("highPacketLoss", "downlink")
            case .highPacketLoss, .highJitter, .noAudioReceived, .videoFrozen: (rawValue, "uplink")
            case .highRtt: (rawValue, "both")
            }
        }
    }

    /// What one second's evaluation saw.
    struct Sample {
        var packetsReceived: Int
        var packetsLost: Int
        var jitterMs: Double
        /// The loss the participant's receiver last reported of the mix we send it, percent.
        var downlinkLossPercent: Double? = nil
        var roundTripMs: Double?
        var jitterBufferDelayMs: Double
        /// Seconds since its last audio packet (nil: none yet), and whether it should be sending.
        var secondsSinceAudio: Double?
        var expectsAudio: Bool
        /// Seconds since its camera's last packet, when it publishes one that is not paused.
        var secondsSinceVideo: Double?
    }

    /// A change to tell: a warning raised (with the value that raised it) or recovered.
    enum Change: Equatable {
        case raised(Warning, value: Double, threshold: Double)
        case recovered(Warning, afterSeconds: Int)
    }

    static let window = 2
    static let recoverSeconds = 3
    /// (trigger, recover): loss in percent, jitter and RTT in ms, silences in seconds.
    static let thresholds: [Warning: (trigger: Double, recover: Double)] = [
        .highPacketLoss: (5, 2), .highDownlinkLoss: (5, 2), .highJitter: (40, 25), .highRtt: (400, 300),
        .noAudioReceived: (3, 1), .videoFrozen: (3, 1),
    ]

    private var history: [(received: Int, lost: Int)] = []
    private var active: [Warning: (since: Int, goodFor: Int)] = [:]
    /// Seconds judged so far.
    private(set) var seconds = 0
    /// Per warning: times raised and seconds active, for the call record.
    private(set) var counts: [Warning: Int] = [:]
    private(set) var activeSeconds: [Warning: Int] = [:]
    private(set) var mosMin: Double?
    private var mosSum = 0.0
    private var mosCount = 0
    private(set) var lastMOS: Double?

    /// One second: the sample's values against the thresholds; returns what changed.
    mutating func evaluate(_ sample: Sample) -> [Change] {
        seconds += 1
        history.append((sample.packetsReceived, sample.packetsLost))
        if history.count > Self.window + 1 { history.removeFirst() }
        var values: [Warning: Double] = [:]
        if let loss = lossPercent() { values[.highPacketLoss] = loss }
        if let loss = sample.downlinkLossPercent { values[.highDownlinkLoss] = loss }
        if sample.packetsReceived > 0 { values[.highJitter] = sample.jitterMs }
        if let rtt = sample.roundTripMs { values[.highRtt] = rtt }
        if sample.expectsAudio { values[.noAudioReceived] = sample.secondsSinceAudio ?? Double(seconds) }
        if let frozen = sample.secondsSinceVideo { values[.videoFrozen] = frozen }
        noteMOS(sample)
        var changes: [Change] = []
        for warning in Warning.allCases {
            guard let limits = Self.thresholds[warning] else { continue }
            let value = values[warning]
            if var state = active[warning] {
                activeSeconds[warning, default: 0] += 1
                state.goodFor = (value ?? 0) <= limits.recover ? state.goodFor + 1 : 0
                if state.goodFor >= Self.recoverSeconds {
                    active[warning] = nil
                    changes.append(.recovered(warning, afterSeconds: seconds - state.since))
                } else {
                    active[warning] = state
                }
            } else if let value, value >= limits.trigger {
                active[warning] = (seconds, 0)
                counts[warning, default: 0] += 1
                changes.append(.raised(warning, value: value, threshold: limits.trigger))
            }
        }
        return changes
    }

    /// Loss over the window, percent; nil until a packet of it is known.
    private func lossPercent() -> Double? {
        guard let first = history.first, let last = history.last, history.count > 1 else { return nil }
        let received = last.received - first.received, lost = last.lost - first.lost
        guard received + lost > 0 else { return nil }
        return Double(max(lost, 0)) * 100 / Double(received + max(lost, 0))
    }

    private mutating func noteMOS(_ sample: Sample) {
        guard sample.packetsReceived > 0, let loss = lossPercent() else { return }
        let delay = (sample.roundTripMs ?? 0) / 2 + sample.jitterBufferDelayMs + 20
        let mos = EModel.mos(oneWayDelayMs: delay, packetLossPercent: loss)
        lastMOS = mos
        mosMin = min(mosMin ?? mos, mos)
        mosSum += mos
        mosCount += 1
    }

    /// The call record's summary: MOS (lowest, mean) and per warning how often and how long.
    var summary: CallQualitySummary {
        var warnings: [String: CallQualitySummary.Tally] = [:]
        for (warning, count) in counts {
            let key = warning == .highDownlinkLoss ? "highPacketLossDownlink" : warning.rawValue
            warnings[key] = CallQualitySummary.Tally(count: count, seconds: activeSeconds[warning] ?? 0)
        }
        let mean = mosCount > 0 ? mosSum / Double(mosCount) : nil
        return CallQualitySummary(mosMin: mosCount > 0 ? mosMin : nil, mosMean: mean, warnings: warnings)
    }
}

/// A call's quality over its whole length, as its call record keeps it: the lowest and mean
/// estimated MOS (nil before any second with audio), and per warning how often it was raised
/// and for how many seconds it was active.
public struct CallQualitySummary: Sendable, Equatable {
    public struct Tally: Sendable, Equatable {
        public var count: Int
        public var seconds: Int
    }

    public var mosMin: Double?
    public var mosMean: Double?
    public var warnings: [String: Tally]
}

/// The ITU-T G.107 E-model, simplified for one call leg: R = 93.2 − Id − Ie,eff, with
/// - Id from the one-way delay only (no echo terms: the clients cancel echo), G.107 §7.4's
///   simple form 0.024·d + 0.11·(d − 177.3)·H(d − 177.3);
/// - Ie,eff = Ie + (95 − Ie)·Ppl / (Ppl/BurstR + Bpl) with Opus taken as Ie = 0 (a wideband
///   codec on the narrowband scale) and Bpl = 20 (PLC and in-band FEC), random loss
///   (BurstR = 1);
/// - R mapped to MOS by G.107 Annex B. No advantage factor, default Ro and Is.
enum EModel {
    static func mos(oneWayDelayMs d: Double, packetLossPercent loss: Double) -> Double {
        let id = 0.024 * d + (d > 177.3 ? 0.11 * (d - 177.3) : 0)
        let ie = 95 * loss / (loss + 20)
        let r = 93.2 - id - ie
        if r <= 0 { return 1 }
        if r >= 100 { return 4.5 }
        return 1 + 0.035 * r + r * (r - 60) * (100 - r) * 7e-6
    }
}
