import AudioMixer
import ChorusCore

/// What the audio stage measured of one member, for the quality monitor's once-a-second sample.
struct AudioQualityInputs {
    var jitterBuffer: JitterBufferStatistics
    /// The loss its receiver reported of the mix we send it, percent; nil before any report.
    var downlinkLossPercent: Int?
    var lastAudioAt: MediaTime?
}

extension AudioStage {
    /// The member's receive-side and mix figures (the API's `audio`, the call record's), caught
    /// up with this tick's silent mixes first.
    func statistics(_ handle: Handle) -> [String: Int]? {
        guard let member = member(handle) else { return nil }
        member.noteSilentMixes(through: ticks)
        return member.statistics
    }

    func qualityInputs(_ handle: Handle) -> AudioQualityInputs? {
        guard let member = member(handle) else { return nil }
        return AudioQualityInputs(jitterBuffer: member.receive.jitterBuffer.statistics,
                                  downlinkLossPercent: member.receivedReport ? member.reportedLossPercent : nil,
                                  lastAudioAt: member.lastAudioAt)
    }

    /// Whether the member sends Opus: its packets can go into a recording as they are.
    func sendsOpus(_ handle: Handle) -> Bool { member(handle)?.inFormat?.codec == .opus }

    /// Starts or stops keeping what the member's jitter buffer plays each tick (a recording's
    /// track of it).
    func capturePlayout(_ handle: Handle, _ captures: Bool) {
        member(handle)?.receive.capturesPlayout = captures
    }

    /// What the member's jitter buffer played this tick (while captured), and whether it was
    /// muted: a recording keeps only what the room could hear.
    func playout(_ handle: Handle) -> (played: [JitterBufferedDecoder.PlayedAudio], muted: Bool)? {
        guard let member = member(handle) else { return nil }
        return (member.receive.playout, member.muted)
    }

    /// The stream the member's mix goes out on (for its goodbye).
    func outboundSSRC(_ handle: Handle) -> SSRC? { member(handle)?.outbound.ssrc }
}
