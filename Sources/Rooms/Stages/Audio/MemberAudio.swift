import AudioMixer
import ChorusCore
import PeerTransport

/// One member's audio in the audio stage: what it sends (jitter buffer and decoder, its level)
/// and what it hears (its own outbound RTP stream of the room's mix, sent through its
/// connection). Made by `AudioStage.add` from the member's `MemberMedia`; reached by the tick
/// through its mixer slot, never by hashing its call ID.
///
/// A class, confined to the stage (the room's queue): the per-packet and per-tick paths mutate
/// it in place, and as a struct every nested mutation risked a copy-on-write of its jitter
/// buffer (measured at 1,000 participants). On a lane (`AudioStage+Lanes`) only the lane that
/// owns its slice touches it.
final class MemberAudio {
    let callId: CallID
    let userId: UserID
    /// The format it sends and the one its mix goes out in (nil: it hears nothing).
    let inFormat: AudioFormat?
    let outFormat: AudioFormat?
    /// RFC 6464 ssrc-audio-level extension id, when negotiated.
    let levelExtensionID: UInt16?
    /// Where its mix goes: its connection (protects, stamps and addresses it).
    let connection: any MemberConnection
    /// Its place in the room's mixer.
    let mixerHandle: RoomAudioMixer<CallID>.Handle
    /// Set once its connection is up: it then receives mixes and its input counts.
    var established = false
    var muted = false
    var receive: JitterBufferedDecoder
    var outbound: OutboundAudioStream
    var remoteSSRC: SSRC?
    /// When its last audio packet arrived.
    var lastAudioAt: MediaTime?
    /// The last RFC 6464 level the client sent, and when. It stands for the frames played until
    /// the next packet (held, not consumed per tick: with packets arriving off the tick grid a
    /// consumed level would alternate with measured ones), and expires when packets stop.
    var lastLevel: (level: SSRCAudioLevel, at: MediaTime)?
    /// Fraction of our packets the member reports lost (RTCP RR), 0–100.
    var reportedLossPercent = 0
    /// Whether its receiver has reported on our mix at all (RTCP RR).
    var receivedReport = false
    var talking = false
    var talkTicks: UInt64 = 0
    var levelSum: Double = 0
    var levelCount: UInt64 = 0
    var comfortNoiseFrames: UInt64 = 0
    /// Ticks played without decoding (muted, or quiet by the client's own level).
    var skippedDecodes: UInt64 = 0
    /// Ticks whose packet nobody needed decoded (a lone talker's, relayed as it is).
    var undecodedFrames: UInt64 = 0
    /// What the member was sent, per tick: a mix frame, nothing (its mix was silent), or
    /// nothing because the encode failed (never expected; counted so a stall shows why).
    var mixFramesSent: UInt64 = 0
    /// The share of `mixFramesSent` that was a single sender's own packet, relayed unchanged.
    var mixFramesRelayed: UInt64 = 0
    var mixFramesSilent: UInt64 = 0
    var mixEncodeFailures: UInt64 = 0
    /// The stage's audio tick (`AudioStage.ticks`) up to which `outbound` has moved: set when
    /// the member is established, then by every frame sent or failed. The ticks after it
    /// sent this member nothing, so its mix was silent: they are skipped on `outbound` and
    /// counted in `mixFramesSilent` only when next needed (`noteSilentMixes`), not one by one
    /// on each silent tick, which touched every member of a big room 50 times a second.
    var outboundTick: UInt64?
    var pcm = [Int16](repeating: 0, count: 960)

    init(callId: CallID, userId: UserID, media: MemberMedia, connection: any MemberConnection,
         mixerHandle: RoomAudioMixer<CallID>.Handle, decoder: any AudioDecoder) {
        self.callId = callId
        self.userId = userId
        self.connection = connection
        self.mixerHandle = mixerHandle
        inFormat = media.audioIn?.format
        outFormat = media.audioOut?.format
        levelExtensionID = media.audioIn?.levelExtensionID
        remoteSSRC = media.audioIn?.ssrc
        receive = JitterBufferedDecoder(decoder: decoder)
        let out = media.audioOut
        outbound = OutboundAudioStream(
            ssrc: out?.ssrc ?? connection.rtcpSSRC, payloadType: PayloadType(masking: out?.format.payloadType ?? 0),
            initialSequenceNumber: UInt16.random(in: 0...UInt16.max), initialTimestamp: UInt32.random(in: 0...UInt32.max),
            csrcAudioLevelExtensionID: out?.csrcLevelExtensionID, clockRate: out?.format.clockRate ?? 48_000)
    }

    /// Whether it gets the mixes (connected, and it takes audio).
    var hearsMixes: Bool { established && outFormat != nil }

    /// This tick's input to the mixer: the next frame out of the jitter buffer (decoded, held
    /// undecoded, concealed or nothing) with its level. The same on the room's thread and on a
    /// lane; it touches only this member. `mayHold` says whether a frame may be held undecoded
    /// at all: only while every listener takes Opus (a lone Opus talker's packet is then relayed
    /// to all of them, where a listener in another codec needs the samples).
    func mixerInput(now: MediaTime, wasSpeaker: Bool, mayHold: Bool) -> AudioMixerInput {
        var input = AudioMixerInput(muted: muted, receivesAudio: hearsMixes)
        if established {
            let frame = nextFrame(now: now, isSpeaker: wasSpeaker, muted: muted,
                                  mayHold: mayHold && inFormat?.codec == .opus)
            input.frame = frame.pcm.map { .int16($0) }
            input.audioLevel = frame.level
            input.undecoded = frame.undecoded
        }
        return input
    }

    /// One mix payload on this member's own stream, for audio tick `tick`: its RTP header
    /// (sequence number, timestamp after the silent ticks since its last frame, CSRCs and their
    /// levels) written in `scratch`, then stamped, protected and appended to `transmits` by its
    /// connection. The same on the room's thread and on a lane.
    func sendMix(_ payload: UnsafeRawBufferPointer, csrcs: [SSRC], csrcAudioLevels: [UInt8], relayed: Bool,
                 tick: UInt64, now: MediaTime, scratch: inout [UInt8], transmits: inout [Transmit]) {
        moveOutbound(to: tick)
        scratch.removeAll(keepingCapacity: true)
        outbound.packet(payload: payload, csrcs: csrcs, csrcAudioLevels: csrcAudioLevels, into: &scratch)
        let reported = ReportedPacket(timestamp: outbound.lastSentTimestamp ?? 0, payloadOctets: payload.count,
                                      clockRate: UInt64(outFormat?.clockRate ?? 48_000))
        connection.sendRTP(scratch, reporting: reported, probeClusterID: nil, now: now, transmits: &transmits)
        mixFramesSent &+= 1
        if relayed { mixFramesRelayed &+= 1 }
    }

    /// This tick's frame (nil samples for silence) and the client's level, if it sends one.
    ///
    /// Decoding is what a large room would spend its time on (~26 µs per participant per
    /// tick), so it is skipped when nobody can hear the result: for a muted participant, and
    /// for one that is not a mixed speaker and whose client reports a level below the voice
    /// threshold. The client's level is the newest packet's, a packet or two ahead of playout,
    /// so decoding resumes before a talker's first loud frame plays. Mixed speakers also get
    /// comfort noise in their DTX pauses.
    ///
    /// A frame that would be decoded and that is one whole packet with the client's level is
    /// held undecoded instead (`undecoded`, nil samples): the mixer asks for it
    /// (`decodeHeldFrame`) only when a mix needs its samples, so a lone talker, whose packet is
    /// relayed, is never decoded.
    func nextFrame(now: MediaTime, isSpeaker: Bool = false, muted: Bool = false, mayHold: Bool = true)
        -> (pcm: [Int16]?, level: SSRCAudioLevel?, undecoded: Bool)
    {
        // A loud level stands for the few packets after it; a quiet one until the next packet.
        // A participant pausing in DTX sends one packet every 400 ms: concealing its quiet
        // stream between them ran the decoder on every tick for nothing audible (62 % of a
        // 1,000-participant room's tick under callgrind, `make bench-instructions`).
        let level = lastLevel.flatMap { last in
            now.nanoseconds(since: last.at) <= Self.levelLifetimeNs || last.level.dBov < Self.decodeThresholdDBov
                ? last.level : nil
        }
        let quiet = level.map { $0.dBov < Self.decodeThresholdDBov } ?? false
        let decode = !muted && (isSpeaker || !quiet)
        // Silence leaves `pcm` as it was: its samples are not handed on below.
        let kind = receive.nextFrame(now: now, into: &pcm, comfortNoise: isSpeaker, decode: decode,
                                     deferDecode: mayHold && level != nil, heldIsQuiet: level.map { $0.dBov < Self.quietDBov } ?? false)
        if talking { talkTicks &+= 1 }
        if kind == .skipped || kind == .undecoded {
            if kind == .skipped { skippedDecodes &+= 1 } else { undecodedFrames &+= 1 }
            if let level, !muted {  // what the client measured stands in for the undecoded frame
                levelSum += Double(level.dBov)
                levelCount &+= 1
            }
        }
        switch kind {
        case .silence: return (nil, nil, false)
        case .skipped: return (nil, level, false)
        case .undecoded: return (nil, level, true)
        case .comfortNoise:
            comfortNoiseFrames &+= 1
            return (pcm, level, false)  // background noise is not the speaker's level
        case .audio, .concealed:
            levelSum += Double(AudioLevel.dBov(of: pcm))
            levelCount &+= 1
            return (pcm, level, false)
        }
    }

    /// Catches `outbound` and `mixFramesSilent` up with the silent mixes of the ticks after
    /// `outboundTick` up to `tick` (see `outboundTick`); nothing before establishment.
    func noteSilentMixes(through tick: UInt64) {
        guard let last = outboundTick, tick > last else { return }
        outbound.skipFrame(Int(clamping: tick - last))
        mixFramesSilent &+= tick - last
        outboundTick = tick
    }

    /// Moves `outbound` to audio tick `tick`, whose frame the caller sends or skips itself: the
    /// silent ticks before it are caught up first.
    func moveOutbound(to tick: UInt64) {
        noteSilentMixes(through: tick &- 1)
        outboundTick = tick
    }

    /// Decodes the frame `nextFrame` held undecoded this tick, because a mix needs it.
    func decodeHeldFrame() -> [Int16]? {
        let kind = pcm.withUnsafeMutableBufferPointer { receive.decodeDeferred(into: $0) }
        guard kind != .silence else { return nil }
        undecodedFrames &-= 1
        return pcm
    }

    /// Receive-side figures, live in the participant's API view and stored in the call record:
    /// packets, loss, FEC, concealment, comfort noise, jitter-buffer delay, talk time, level.
    var statistics: [String: Int] {
        let jb = receive.jitterBuffer.statistics
        return [
            "packetsReceived": jb.packetsReceived, "lost": jb.lost, "late": jb.late, "discarded": jb.discarded,
            "fecRecoveries": jb.fecRecoveries, "concealedFrames": jb.concealedFrames,
            "comfortNoiseFrames": Int(clamping: comfortNoiseFrames),
            "skippedDecodes": Int(clamping: skippedDecodes), "undecodedFrames": Int(clamping: undecodedFrames),
            "jitterBufferDelayMeanMs": Self.milliseconds(jb.meanDelayMs),
            "jitterBufferDelayMaxMs": Self.milliseconds(jb.maxDelayMs),
            "jitterBufferTargetMs": Self.milliseconds(jb.currentTargetMs),
            "talkTimeMs": Int(clamping: talkTicks &* 20),
            "meanLevelDbov": levelCount == 0 ? -127 : Int((levelSum / Double(levelCount)).rounded()),
            "mixFramesSent": Int(clamping: mixFramesSent),
            "mixFramesRelayed": Int(clamping: mixFramesRelayed), "mixFramesSilent": Int(clamping: mixFramesSilent),
            "mixEncodeFailures": Int(clamping: mixEncodeFailures),
        ]
    }

    /// How long a client's level stands for the audio played after it (a few packets).
    static let levelLifetimeNs: UInt64 = 100_000_000
    /// Client levels below this are not decoded (unless a mixed speaker): well under the voice
    /// detector's absolute threshold (-60 dBov), so nothing it could call voice is skipped.
    static let decodeThresholdDBov: Float = -70
    /// Client levels below this mark a packet held undecoded as quiet, so the jitter buffer may
    /// shed delay on it: about where a decoded frame's peak falls under its quiet bound (100).
    static let quietDBov: Float = -50

    private static func milliseconds(_ value: Double) -> Int {
        value.isFinite ? Int(clamping: Int64(value.rounded())) : 0
    }
}
