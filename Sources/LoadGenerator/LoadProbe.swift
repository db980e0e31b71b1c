import AudioMixer
import ChorusCore

/// A probe listener's ear: it decodes the mix it receives and times the onsets of the room's
/// burst tone against when the burst talker started each burst (`RoomTimeline`), which gives
/// the run's mouth-to-ear latency; a burst never heard is a missed onset, one heard twice an
/// artifact worth reporting.
///
/// A value inside its participant's `LoadStatistics`, fed each audio packet's payload on the
/// participant's event loop (`heard`).
struct LoadProbe {
    let timeline: RoomTimeline
    private let decoder: OpusDecoder
    private var pcm = [Int16](repeating: 0, count: 5_760)
    /// The RTP timestamp of the last mix frame that carried the burst tone, and when it came.
    private var lastBurstFrameTimestamp: UInt32?
    private var lastBurstFrameArrival = MediaTime(nanoseconds: 0)
    /// Mouth-to-ear latencies measured, milliseconds, and when.
    private(set) var latencies: [(at: MediaTime, ms: Double)] = []
    /// The burst starts this probe detected an onset of (what a missed onset is told from).
    private(set) var detectedBursts: Set<MediaTime> = []
    /// When this probe heard an onset of a burst it had already heard: the tone came back after
    /// 200 ms without it, an artifact (a mix encoder replaying its history did this), not a
    /// latency. With the hole it came after, in the stream's time and in arrival time: a hole
    /// in both is a mix that went on without the tone; one in the stream only is a jump of
    /// the timestamps (ticks the server dropped).
    private(set) var repeatedOnsets: [(at: MediaTime, hole: LoadResults.OnsetHole)] = []

    /// nil when no Opus decoder can be made (the participant then listens without timing).
    init?(timeline: RoomTimeline) {
        guard let decoder = try? OpusDecoder() else { return nil }
        self.timeline = timeline
        self.decoder = decoder
    }

    /// One mix frame's payload, with its RTP timestamp and arrival.
    mutating func heard(_ payload: ArraySlice<UInt8>, timestamp: UInt32, now: MediaTime) {
        guard !payload.isEmpty else { return }
        let decoder = decoder
        let samples = payload.withUnsafeBufferPointer { input in
            pcm.withUnsafeMutableBufferPointer { output in (try? decoder.decode(input, into: output)) ?? 0 }
        }
        guard samples > 0 else { return }
        let share = pcm.withUnsafeBufferPointer { LoadAudio.burstShare(UnsafeBufferPointer(rebasing: $0[0..<samples])) }
        guard share > 0.3 else { return }
        // An onset: the first burst frame 200 ms or more after the last one in the stream's own
        // time (its RTP timestamps, which run on while the server sends nothing for a silent
        // mix): a server or generator that stalls mid-burst delivers the rest of it late, and
        // that is latency, not a second onset.
        // A step back of more than 10 s is a new timeline, not a reordered packet.
        let gap = lastBurstFrameTimestamp.map { Int32(bitPattern: timestamp &- $0) }
        let startsOnset = gap.map { $0 >= 9_600 || $0 < -480_000 } ?? true
        if startsOnset, let sent = timeline.burst(before: now) {
            if detectedBursts.insert(sent).inserted {
                latencies.append((now, Double(now.nanoseconds(since: sent)) / 1e6))
            } else {
                let hole = LoadResults.OnsetHole(streamMs: Double(gap ?? 0) / 48,
                                                 arrivalMs: Double(now.nanoseconds(since: lastBurstFrameArrival)) / 1e6)
                repeatedOnsets.append((now, hole))
            }
        }
        if startsOnset || (gap ?? 0) > 0 {
            lastBurstFrameTimestamp = timestamp
            lastBurstFrameArrival = now
        }
    }
}
