import AudioMixer
import ChorusCore
import RTCP
import RTP

/// The room's audio (the MCU): each member's jitter buffer and decoder, the mixer (every member
/// hears the room minus itself, the top speakers mixed), the shared encodes (one per distinct
/// mix and encoding, a lone talker's own packet relayed without any) and each listener's own
/// stream, sent through its connection.
///
/// A value the room core owns and drives, with `now` and the output as parameters: `add` and
/// `remove` a member (from its `MemberMedia`), `setEstablished`/`setMuted` as its call changes,
/// `receive` each audio packet, `receiveReport` each report block about a member's mix, and
/// `tick` every 20 ms. It knows members only by their media contract and their connection,
/// never their kind; it reads no other stage's state. A big room's per-listener work is spread
/// over lanes that the shell's `LaneRunner` runs (`AudioStage+Lanes`).
struct AudioStage {
    /// A member's place in the stage (its mixer slot).
    typealias Handle = RoomAudioMixer<CallID>.Handle

    var mixer: RoomAudioMixer<CallID>
    var encoders = MixEncoders()
    /// The Opus settings of the mix encoders.
    let encoding: AudioEncoding
    /// How many lanes a big room's per-listener work may use, and who runs them.
    let lanes: Int
    let laneRunner: any LaneRunner
    /// Members in the order they joined: what the per-tick scans walk (no hashing per member).
    private(set) var members: [MemberAudio] = []
    /// The same members by their mixer slot: how the tick finds a mix's recipients.
    var membersBySlot: [MemberAudio?] = []
    /// Members hearing their mix in an encoding other than Opus (phones): while there are
    /// none, a mix's recipients are not sorted by encoding.
    private var plainListeners = 0
    /// Talking members who left since the last tick: their `talking.stopped` comes with the
    /// next tick and still names their user.
    var departedTalkers: [CallID: UserID] = [:]
    /// One recipient's mix packet, rebuilt for each (kept for its capacity), and one per lane.
    var mixPacket: [UInt8] = []
    var laneScratch: [[UInt8]] = []
    /// Audio ticks run: the index of the current one during a tick (`MemberAudio.outboundTick`).
    var ticks: UInt64 = 0
    /// Payloads delivered on several lanes, and ticks whose inputs were made on several.
    var laneFanOuts: UInt64 = 0
    var laneInputFanOuts: UInt64 = 0
    /// Whether something takes the full mix every tick (a recording, a forward): it is then
    /// encoded even when no listener hears it.
    var tapsFullMix = false {
        didSet { mixer.alwaysMixFull = tapsFullMix }
    }

    init(mixedSpeakers: Int, encoding: AudioEncoding, lanes: Int, laneRunner: any LaneRunner) {
        mixer = RoomAudioMixer(configuration: AudioMixerConfiguration(mixedSpeakers: mixedSpeakers))
        self.encoding = encoding
        self.lanes = max(1, lanes)
        self.laneRunner = laneRunner
    }

    /// The number of speakers the running mixer holds.
    var mixedSpeakers: Int { mixer.configuration.mixedSpeakers }

    mutating func setMixedSpeakers(_ count: Int) { mixer.setMixedSpeakers(count) }

    /// Distinct encodes so far, and speakers' encoders started as a continuation of the full mix.
    var encodeCount: UInt64 { encoders.encodes }
    var continuations: UInt64 { encoders.continuations }

    /// Takes a member in: its decoder for what it sends (at the mixer's 48 kHz whatever its
    /// rate), its stream for what it hears. Throws when its codec cannot be set up.
    mutating func add(_ callId: CallID, userId: UserID, media: MemberMedia, connection: any MemberConnection)
        throws(AudioCodecError) -> Handle
    {
        let decoder = try (media.audioIn?.format ?? .opus(payloadType: 111)).makeDecoder()
        let handle = mixer.addParticipant(callId, ssrc: media.audioIn?.ssrc)
        let member = MemberAudio(callId: callId, userId: userId, media: media, connection: connection,
                                 mixerHandle: handle, decoder: decoder)
        members.append(member)
        while membersBySlot.count <= handle.slot { membersBySlot.append(nil) }
        membersBySlot[handle.slot] = member
        if let out = member.outFormat, out.codec != .opus { plainListeners += 1 }
        return handle
    }

    /// Takes a member out; its figures are caught up with this tick first (`statistics`).
    mutating func remove(_ handle: Handle) {
        guard let member = member(handle) else { return }
        member.noteSilentMixes(through: ticks)
        if member.talking { departedTalkers[member.callId] = member.userId }
        mixer.removeParticipant(member.callId)
        membersBySlot[handle.slot] = nil
        members.removeAll { $0 === member }
        if let out = member.outFormat, out.codec != .opus { plainListeners -= 1 }
    }

    /// The member in `handle`'s slot, if it is still that member.
    func member(_ handle: Handle) -> MemberAudio? {
        guard membersBySlot.indices.contains(handle.slot), let member = membersBySlot[handle.slot],
              member.mixerHandle == handle
        else { return nil }
        return member
    }

    /// Its connection is up: it hears the mixes from the next tick.
    func setEstablished(_ handle: Handle) {
        guard let member = member(handle) else { return }
        member.established = true
        if member.outboundTick == nil { member.outboundTick = ticks }
    }

    func setMuted(_ handle: Handle, _ muted: Bool) {
        member(handle)?.muted = muted
    }

    /// Whether other encodings than Opus need sorting out per mix.
    var hasPlainListeners: Bool { plainListeners > 0 }
}

extension AudioStage {
    /// An audio RTP packet from a member (already decrypted): into its jitter buffer, on the
    /// mixer's 48 kHz timeline, with the client's RFC 6464 level when it sends one.
    mutating func receive(_ rtp: RTPPacket, from handle: Handle, now: MediaTime) {
        let header = rtp.header
        // Mutated in place through the (class) member: a local copy of its audio state would
        // share the jitter buffer's storage, and the insert would then copy all of it.
        guard let member = member(handle), let format = member.inFormat,
              format.payloadType == header.payloadType.rawValue
        else { return }
        member.lastAudioAt = now
        if member.remoteSSRC != header.ssrc {
            member.remoteSSRC = header.ssrc
            _ = mixer.setSSRC(header.ssrc, for: handle)
        }
        if let id = member.levelExtensionID, header.hasExtension,
           let value = rtp.headerExtensions.first(id: UInt8(truncatingIfNeeded: id)), let byte = value.first {
            member.lastLevel = (SSRCAudioLevel(byte: byte), now)
        }
        // Scaling by the rate's factor keeps wrap-around: differences mod 2^32 scale with it.
        member.receive.insert(
            sequenceNumber: header.sequenceNumber, timestamp: header.timestamp &* format.timestampScale,
            payload: Array(rtp.payload), arrival: now, marker: header.marker)
    }

    /// A report block from a member's receiver about the mix we send it (RTCP SR or RR): its
    /// loss decides how much in-band FEC the mix's encoder adds. False when the block is about
    /// another stream.
    @discardableResult
    func receiveReport(_ block: ReportBlock, from handle: Handle) -> Bool {
        guard let member = member(handle), block.ssrc == member.outbound.ssrc else { return false }
        member.reportedLossPercent = Int(block.fractionLost) * 100 / 256
        member.receivedReport = true
        return true
    }
}
