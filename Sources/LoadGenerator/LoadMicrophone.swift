import ChorusCore
import RTP

/// A simulated participant's microphone: its pre-encoded Opus loop (`LoadAudio`) sent as RTP
/// every 20 ms, each packet with its frame's RFC 6464 level (V bit clear, as aiortc sends it),
/// and the room's burst talker noting each burst's start on the room's timeline (what the
/// probes time their onsets against).
///
/// In DTX (`LoadDTX`) a silent participant sends one frame in 20 (every 400 ms, WebRTC's
/// comfort-noise update interval) and lets the RTP timestamp run on over the gaps (RFC 7587
/// §3.1.3). Each microphone keeps its own 20 ms phase, as real clients do, and a late loop is
/// caught up by at most three frames sent.
///
/// A value owned by its participant: `start` once the call is established (with the answer's
/// DTX and transport-cc), then `tick` on the participant's tick; `nextSendAt` says when the
/// next packet is due, so that the shard's loop can pass over the participant until then.
struct LoadMicrophone {
    let audio: LoadAudio
    let ssrc: UInt32
    let timeline: RoomTimeline
    let isBurstTalker: Bool
    private(set) var sendsDTX = false
    private var frameIndex = 0
    /// When the next 20 ms frame is due; nil until the first tick.
    private var nextFrameAt: MediaTime?
    private var sequenceNumber = UInt16.random(in: 0...UInt16.max)
    private var timestamp = UInt32.random(in: 0...UInt32.max)
    /// The header, kept between packets so that only its values change: with the typed level
    /// element inline, serializing it allocates nothing (`RTPHeaderFields`).
    private var header: RTPHeaderFields

    /// Frames per DTX comfort-noise update: 400 ms, as WebRTC's Opus sends them.
    static let dtxUpdateFrames = 20

    init(audio: LoadAudio, ssrc: UInt32, timeline: RoomTimeline, isBurstTalker: Bool) {
        self.audio = audio
        self.ssrc = ssrc
        self.timeline = timeline
        self.isBurstTalker = isBurstTalker
        header = RTPHeaderFields(
            payloadType: PayloadType(masking: LoadSDP.opusPayloadType), sequenceNumber: 0, timestamp: 0, ssrc: SSRC(ssrc),
            extensions: [RTPHeaderExtensionElement(id: LoadSDP.audioLevelExtensionID,
                                                   value: .audioLevel(AudioLevelIndication(voiceActivity: false, level: 127)))])
    }

    /// What the answer decided: DTX for a silent participant when asked (or forced), and with
    /// transport-cc an empty transport-wide sequence number element, which the transport
    /// fills in place as the packet leaves (no allocation).
    mutating func start(dtx: LoadDTX, answerUsesDTX: Bool, transportWideSequence: Bool) {
        sendsDTX = audio.isSilence && (dtx == .on || (dtx == .negotiated && answerUsesDTX))
        if transportWideSequence {
            header.extensions.append(RTPHeaderExtensionElement(id: LoadSDP.transportWideCCExtensionID,
                                                               value: .transportSequenceNumber(0)))
        }
    }

    /// Sends the frames that are due to `send`. Frames that DTX leaves out do not count
    /// towards the catch-up limit: a listener the loop passed over (`nextSendAt`) passes over
    /// them here, its timestamp running on as they would have.
    mutating func tick(now: MediaTime, send: (consuming [UInt8]) -> Void) {
        var next = nextFrameAt ?? now.adding(nanoseconds: UInt64.random(in: 0..<20_000_000))
        var sent = 0
        while next <= now, sent < 3 {
            if let packet = nextPacket(now: now) {
                send(packet)
                sent += 1
            }
            next = next.adding(milliseconds: 20)
        }
        nextFrameAt = next <= now ? now.adding(milliseconds: 20) : next
    }

    /// The next frame as RTP, or nil when DTX passes over it.
    private mutating func nextPacket(now: MediaTime) -> [UInt8]? {
        defer {
            frameIndex += 1
            timestamp &+= 960
        }
        if sendsDTX, frameIndex % Self.dtxUpdateFrames != 0 { return nil }
        let index = frameIndex % audio.frames.count
        if isBurstTalker, audio.burstStarts.contains(index) { timeline.burstSent(at: now) }
        header.marker = frameIndex == 0
        header.sequenceNumber = sequenceNumber
        header.timestamp = timestamp
        header.extensions[0].value = .audioLevel(AudioLevelIndication(voiceActivity: false, level: audio.levels[index]))
        sequenceNumber &+= 1
        var packet: [UInt8] = []
        // Room for the SRTP tag, so that protecting it in place needs no second buffer.
        packet.reserveCapacity(24 + audio.frames[index].count + 16)
        guard (try? header.serialize(into: &packet)) != nil else { return nil }
        packet += audio.frames[index]
        return packet
    }

    /// When the next packet actually leaves: the next frame, or in DTX the next comfort-noise
    /// update; nil before the first tick.
    var nextSendAt: MediaTime? {
        guard let nextFrameAt else { return nil }
        return sendsDTX ? Self.nextDTXUpdate(from: nextFrameAt, frameIndex: frameIndex) : nextFrameAt
    }

    /// When a participant in DTX next sends: the first frame from `frameIndex` (due at
    /// `nextFrameAt`, one every 20 ms) that is a comfort-noise update.
    static func nextDTXUpdate(from nextFrameAt: MediaTime, frameIndex: Int) -> MediaTime {
        let framesToUpdate = (dtxUpdateFrames - frameIndex % dtxUpdateFrames) % dtxUpdateFrames
        return nextFrameAt.adding(milliseconds: UInt64(20 * framesToUpdate))
    }
}
