import AudioMixer
import ChorusCore

/// One participant's audio in the room: what it sends (jitter buffer + Opus decoder, level)
/// and what it hears (its outbound RTP stream of the room's mix). Owned by the `Participant`,
/// used only on the room's queue.
struct ParticipantAudio {
    /// Opus payload type the participant negotiated (it differs between clients).
    let payloadType: UInt8
    /// RFC 6464 ssrc-audio-level extension id, when negotiated.
    let levelExtensionID: UInt16?
    var receive: JitterBufferedDecoder
    var outbound: OutboundAudioStream
    var remoteSSRC: SSRC?
    /// The last RFC 6464 level the client sent, consumed by the next tick.
    var pendingLevel: SSRCAudioLevel?
    /// Fraction of our packets the participant reports lost (RTCP RR), 0–100.
    var reportedLossPercent = 0
    var talking = false
    var talkTicks: UInt64 = 0
    var levelSum: Double = 0
    var levelCount: UInt64 = 0
    var pcm = [Int16](repeating: 0, count: 960)

    init(payloadType: UInt8, levelExtensionID: UInt16?, csrcLevelExtensionID: UInt16?, ssrc: SSRC,
         decoder: any AudioDecoder) {
        self.payloadType = payloadType
        self.levelExtensionID = levelExtensionID
        receive = JitterBufferedDecoder(decoder: decoder)
        let extensionID = csrcLevelExtensionID.flatMap { $0 <= 14 ? UInt8($0) : nil }
        outbound = OutboundAudioStream(
            ssrc: ssrc, payloadType: PayloadType(masking: payloadType),
            initialSequenceNumber: UInt16.random(in: 0...UInt16.max), initialTimestamp: UInt32.random(in: 0...UInt32.max),
            csrcAudioLevelExtensionID: extensionID)
    }

    /// Decodes this tick's frame (nil samples for silence) and takes the client's pending level.
    mutating func nextFrame(now: MediaTime) -> (pcm: [Int16]?, level: SSRCAudioLevel?) {
        let kind = pcm.withUnsafeMutableBufferPointer { receive.nextFrame(now: now, into: $0) }
        let level = pendingLevel
        pendingLevel = nil
        if talking { talkTicks &+= 1 }
        guard kind != .silence else { return (nil, level) }
        levelSum += Double(AudioLevel.dBov(of: pcm))
        levelCount &+= 1
        return (pcm, level)
    }

    /// Receive-side figures for the call record (issue: packets, loss, FEC, concealment, delay,
    /// talk time, mean level).
    var statistics: [String: EventField] {
        let jb = receive.jitterBuffer.statistics
        return [
            "packetsReceived": .int(Int(clamping: jb.packetsReceived)), "lost": .int(Int(clamping: jb.lost)),
            "late": .int(Int(clamping: jb.late)), "discarded": .int(Int(clamping: jb.discarded)),
            "fecRecoveries": .int(Int(clamping: jb.fecRecoveries)),
            "concealedFrames": .int(Int(clamping: jb.concealedFrames)),
            "jitterBufferDelayMeanMs": .int(Int(jb.meanDelayMs.rounded())),
            "jitterBufferDelayMaxMs": .int(Int(jb.maxDelayMs.rounded())),
            "jitterBufferTargetMs": .int(Int(jb.currentTargetMs.rounded())),
            "talkTimeMs": .int(Int(clamping: talkTicks &* 20)),
            "meanLevelDbov": .int(levelCount == 0 ? -127 : Int((levelSum / Double(levelCount)).rounded())),
        ]
    }
}
