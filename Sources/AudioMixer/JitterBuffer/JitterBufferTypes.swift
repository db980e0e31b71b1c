/// What the jitter buffer tells its owner to play for the next stretch of audio; the answer to
/// one `AdaptiveJitterBuffer.pop(now:)`. Sample counts are at 48 kHz and cover exactly the
/// stretch of the sender's timeline that this output stands for, so a decoder stage can keep
/// its PCM in step (see `JitterBufferedDecoder`).
public enum JitterBufferOutput: Equatable, Sendable {
    /// Decode this payload. It is the packet due now, in order.
    case frame([UInt8])
    /// The packet due now is missing, but the one after it is here: decode the redundant copy
    /// of the lost audio it carries (Opus in-band FEC, `decode_fec = 1`) for `samples`, then
    /// decode `nextPayload` itself normally when it is returned as `.frame` by the next pop.
    case recoverWithFEC(nextPayload: [UInt8], samples: Int)
    /// The packet due now is missing and nothing can recover it: run packet loss concealment
    /// for `samples`. Also used, rarely, to stretch playout when the buffer runs too thin.
    case conceal(samples: Int)
    /// Nothing to play: the sender has gone quiet without saying so (after a few concealed
    /// frames), or the stream stalled. Play silence, or comfort noise; not more speech-like PLC.
    case silence(samples: Int)
    /// The sender is in discontinuous transmission (a DTX frame, or a timestamp gap between
    /// consecutive packets). Play silence or comfort noise, not concealment.
    case dtx(samples: Int)
    /// No packet has been played yet (waiting for the first ones to build up the target delay).
    case notStarted
}

/// Counters and gauges of one `AdaptiveJitterBuffer`, for call statistics and metrics.
public struct JitterBufferStatistics: Equatable, Sendable {
    /// Every `insert` call.
    public var packetsReceived = 0
    /// Packets that were not there at their playout time (recovered by FEC, concealed, or
    /// skipped after a stall). A packet that arrives after that time counts here and in `late`.
    public var lost = 0
    /// Packets that arrived after their playout time; dropped.
    public var late = 0
    /// Packets thrown away: duplicates, overflow and catch-up drops, flushes on resync, and
    /// packets too old to place.
    public var discarded = 0
    /// The duplicate share of `discarded`.
    public var duplicates = 0
    /// The frames dropped to shrink the delay (clock drift, jitter subsiding); part of `discarded`.
    public var droppedFrames = 0
    /// Frames inserted (concealment or silence) to grow the delay.
    public var insertedFrames = 0
    /// `.recoverWithFEC` outputs.
    public var fecRecoveries = 0
    /// `.conceal` outputs for missing packets.
    public var concealedFrames = 0
    /// `.dtx` and `.silence` outputs after the first packet was played.
    public var silentFrames = 0
    /// Restarts on a broken timeline (sequence or timestamp jump, sender restart).
    public var resyncs = 0
    /// Mean and maximum time played packets spent waiting in the buffer, milliseconds.
    public var meanDelayMs = 0.0
    public var maxDelayMs = 0.0
    /// The playout delay the buffer aims at, milliseconds (20…200 by default).
    public var currentTargetMs = 0.0
    /// The playout delay it has now, relative to the fastest recent packet, milliseconds.
    public var currentDelayMs = 0.0
    /// The jitter quantile the target is derived from, milliseconds.
    public var jitterMs = 0.0

    public init() {}
}

/// Tuning of an `AdaptiveJitterBuffer`. The defaults suit Opus at 48 kHz in 20 ms packets.
public struct JitterBufferConfiguration: Equatable, Sendable {
    /// RTP clock rate of the stream (48 000 for Opus, RFC 7587).
    public var clockRate = 48_000
    /// Samples the owner consumes per tick; the unit of silence outputs.
    public var tickSamples = 960
    /// Packet duration assumed until timestamps or the owner say otherwise.
    public var defaultPacketSamples = 960
    /// Bounds of the adaptive target delay, and where it starts.
    public var minimumTargetMs = 20
    public var maximumTargetMs = 200
    public var initialTargetMs = 40
    /// Share of recent packets the target delay should catch in time.
    public var jitterQuantile = 0.95
    /// Added to the jitter quantile (timer and scheduling slack).
    public var safetyMarginMs = 5
    /// How fast old jitter is forgotten, in packets.
    public var jitterHalfLifePackets = 250
    /// Whether missing packets may be recovered from the next packet's in-band FEC. When
    /// recent loss exceeds 1 %, the target is kept at two packets at least, so that the next
    /// packet is usually here when one goes missing.
    public var inbandFEC = true
    /// Concealment run after which the buffer reports silence instead (~5 frames).
    public var maximumConcealmentMs = 100
    /// Payloads this short are DTX frames (RFC 7587 §3.1.3: 2 bytes or less need not be sent).
    public var dtxPayloadMaximumBytes = 2
    /// Packets held at most (power of two); bounds memory whatever the sender does.
    public var capacity = 128
    /// A timestamp this far from the playout position means a new timeline: resynchronize.
    public var resynchronizeAfterMs = 1_000

    public init() {}
}
