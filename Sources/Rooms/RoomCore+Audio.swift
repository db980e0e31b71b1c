import AudioMixer
import ChorusCore
import PeerTransport
import RTCP
import RTP

/// The room's mix encoders: one per distinct mix (the shared full mix, and one "minus me" per
/// mixed speaker), kept while that mix exists so each stream's encoder state stays continuous.
///
/// An encoder that sat out ticks (its mix was relayed as one sender's packet, or silent) is
/// restarted before it encodes again: its history (the lookahead's last milliseconds, SILK's
/// pitch and gain state) is audio from before the gap, and carried into the first packet after
/// it, that audio rang again, e.g. a talker's tone heard a second time 200 ms after it ended.
///
/// Except when its recipient heard the full mix's encode on the tick before (a listener that
/// just became a speaker, or a speaker whose pause was sent the full mix): then the speaker's
/// encoder continues the full mix encoder's stream (`continueFullStream`, a copy of its state
/// from before this tick's encode), so the packets the recipient's decoder gets stay one
/// continuous stream. A fresh encoder there broke it at every speaker's start and after every
/// pause between its words. The other way (a speaker's pause starting, its stream going over
/// to the full mix's encode) keeps a smaller break: the shared encoder cannot take over any
/// one speaker's state.
struct MixEncoders {
    enum Key: Hashable { case full, minusOne(CallID) }

    var encoders: [Key: (encoder: OpusEncoder, lastTick: UInt64)] = [:]
    /// The tick being sent (`beginTick`), counted so a gap of one tick shows.
    private(set) var tick: UInt64 = 0
    var payload = [UInt8](repeating: 0, count: AudioCodecFormat.maxPayloadBytes)
    /// This tick's encoded full mix (kept for its capacity) and its contributors, nil before it
    /// is encoded: a speaker that contributes nothing this tick hears exactly that mix, so its
    /// own mix is sent from it, not encoded again.
    var fullPayload: [UInt8] = []
    var fullSources: [CallID]?
    /// Distinct encodes done, for tests and metrics.
    var encodes: UInt64 = 0
    /// Speakers' encoders started as a continuation of the full mix's stream, for tests.
    var continuations: UInt64 = 0
    /// The tick on which each speaker's mix was last sent as the full mix's encode.
    var heardFullEncode: [CallID: UInt64] = [:]

    mutating func beginTick() {
        tick &+= 1
        fullSources = nil
    }

    /// Before this tick's full mix is encoded: each speaker's own mix in `mixes` whose recipient
    /// heard the full mix's encode on the last tick (it was a listener then, or its pause was
    /// sent that encode), and whose own encoder did not encode then, gets its encoder as a copy
    /// of the full mix encoder's state. Its encoder then counts as having encoded the last
    /// tick, which it has in effect. Only a speaker's start or its pause's end copies anything.
    mutating func continueFullStream(into mixes: ArraySlice<AudioMixerTick<CallID>.Mix>, settings: AudioEncoding) {
        let previous = tick &- 1
        guard let full = encoders[.full], full.lastTick == previous else { return }
        for mix in mixes {
            guard case .minusOne(let id) = mix.kind, !mix.isSilent,
                  mix.startsFromFullMix || heardFullEncode[id] == previous
            else { continue }
            let key = Key.minusOne(id)
            if let own = encoders[key], own.lastTick == previous { continue }
            guard let encoder = encoders[key]?.encoder ?? makeEncoder(settings),
                  encoder.continueStream(of: full.encoder)
            else { continue }
            encoders[key] = (encoder, previous)
            continuations &+= 1
        }
    }

    /// Notes that a speaker's own mix went out as the full mix's encode this tick.
    mutating func noteHeardFullEncode(_ id: CallID) {
        heardFullEncode[id] = tick
    }

    /// The encoder of `key` for this tick: created on first use, restarted when it did not
    /// encode the previous tick.
    mutating func encoder(for key: Key, settings: AudioEncoding) -> OpusEncoder? {
        if let existing = encoders[key] {
            if existing.lastTick &+ 1 != tick { existing.encoder.reset() }
            encoders[key]?.lastTick = tick
            return existing.encoder
        }
        guard let created = makeEncoder(settings) else { return nil }
        encoders[key] = (created, tick)
        return created
    }

    private func makeEncoder(_ settings: AudioEncoding) -> OpusEncoder? {
        try? OpusEncoder(bitrate: settings.bitrate, complexity: settings.complexity, inbandFEC: true,
                         mode: settings.mode)
    }

    /// Forgets encoders of mixes that no longer exist.
    mutating func retain(_ keys: Set<Key>) {
        for key in encoders.keys where !keys.contains(key) { encoders.removeValue(forKey: key) }
        for id in heardFullEncode.keys where !keys.contains(.minusOne(id)) { heardFullEncode.removeValue(forKey: id) }
    }
}

extension RoomCore {
    /// An audio RTP packet from `callId` (already decrypted): into its jitter buffer, with the
    /// client's RFC 6464 level when it sends one.
    func receiveAudio(_ rtp: RTPPacket, callId: CallID, now: MediaTime) {
        let header = rtp.header
        // Mutated in place through the (class) participant: a local copy of its audio state
        // would share the jitter buffer's storage, and the insert would then copy all of it.
        guard let participant = participants[callId], participant.audio.payloadType == header.payloadType.rawValue
        else { return }
        participant.lastAudioAt = now
        if participant.audio.remoteSSRC != header.ssrc {
            participant.audio.remoteSSRC = header.ssrc
            if let handle = mixer.handle(for: callId) { _ = mixer.setSSRC(header.ssrc, for: handle) }
        }
        if let id = participant.audio.levelExtensionID, header.hasExtension,
           let value = rtp.headerExtensions.first(id: UInt8(truncatingIfNeeded: id)), let byte = value.first {
            participant.audio.lastLevel = (SSRCAudioLevel(byte: byte), now)
        }
        participant.audio.receive.insert(
            sequenceNumber: header.sequenceNumber, timestamp: header.timestamp, payload: Array(rtp.payload),
            arrival: now, marker: header.marker)
    }

    /// Loss the participant reports about the mix we send it (report blocks of its RTCP SR or
    /// RR), which decides how much in-band FEC its mix's encoder adds.
    func receiveReportBlocks(_ blocks: RTCPItemList<ReportBlock>, from participant: Participant) {
        let ours = participant.audio.outbound.ssrc
        if let block = blocks.first(where: { $0.ssrc == ours }) {
            participant.audio.reportedLossPercent = Int(block.fractionLost) * 100 / 256
            participant.audio.receivedReport = true
            participant.transport.receivedReportBlock(block, now: now)
        }
    }

    /// One 20 ms audio tick: decode one frame per participant, mix the top speakers, encode
    /// each distinct mix once, send each recipient its mix on its own RTP stream.
    func audioTick(now: MediaTime) {
        audioTicks &+= 1
        // Over `members`, not `participants`: iterating the dictionary keeps its storage shared
        // (a mutation through it would copy all of it: measured as most of a 1,000-participant
        // tick once), and looking each one up hashes its call ID.
        let lanes = laneCount(forRecipients: members.count)
        if lanes > 1 {
            feedMixerInLanes(lanes, now: now)
        } else {
            for participant in members { feedMixer(participant, now: now) }
        }
        recordSkippedTicks(now: now)
        recordTracks()
        let tick = mixer.tick(now: now) { [membersBySlot] slot in
            guard membersBySlot.indices.contains(slot), let participant = membersBySlot[slot] else { return nil }
            return participant.audio.decodeHeldFrame().map { .int16($0) }
        }
        encoders.beginTick()
        encoders.continueFullStream(into: tick.mixes, settings: media?.audio ?? AudioEncoding())
        var live = Set<MixEncoders.Key>()
        for mix in tick.mixes {
            let key: MixEncoders.Key = if case .minusOne(let id) = mix.kind { .minusOne(id) } else { .full }
            live.insert(key)
            send(mix, key: key, now: now)
        }
        encoders.retain(live)
        if tapsFullMix {
            recordTick(fullMixTap)
            forwardTick(fullMixTap)
            fullMixTap = nil
        }
        for event in tick.events { emitAudioEvent(event, now: now) }
    }

    /// Hands the mixer this tick's input for one participant (decoded in place: the participant
    /// is a class, so its decode buffer is reused, not copied per tick), through its mixer
    /// handle: no call ID is hashed per participant and tick.
    private func feedMixer(_ participant: Participant, now: MediaTime) {
        guard let handle = participant.mixerHandle else { return }
        mixer.setInput(for: handle) { wasSpeaker in participant.mixerInput(now: now, wasSpeaker: wasSpeaker) }
    }

    /// The participants a mix goes to, by the mixer's slots (`membersBySlot`): those that can
    /// receive now.
    private func recipients(of mix: AudioMixerTick<CallID>.Mix) -> [Participant] {
        var recipients: [Participant] = []
        recipients.reserveCapacity(mix.recipientSlots.count)
        for slot in mix.recipientSlots where membersBySlot.indices.contains(slot) {
            if let participant = membersBySlot[slot], participant.state == .established { recipients.append(participant) }
        }
        return recipients
    }

    private func send(_ mix: AudioMixerTick<CallID>.Mix, key: MixEncoders.Key, now: MediaTime) {
        // A silent mix sends nothing, and its recipients learn of it with their next frame
        // (`ParticipantAudio.outboundTick`): in a big room's pauses nobody is touched.
        if mix.isSilent { return }
        let recipients = recipients(of: mix)
        // A recording or an RTP forward takes the full mix even when nobody else does.
        let tapped = key == .full && tapsFullMix
        guard !recipients.isEmpty || tapped else { return }
        if let relayed = relayablePayload(of: mix) {
            if tapped { fullMixTap = relayed }
            relayed.withUnsafeBytes { deliver($0, mix: mix, to: recipients, relayed: true, now: now) }
            return
        }
        if key != .full, encoders.fullSources == mix.contributingSources {
            if case .minusOne(let id) = key { encoders.noteHeardFullEncode(id) }
            encoders.fullPayload.withUnsafeBytes { deliver($0, mix: mix, to: recipients, relayed: false, now: now) }
            return
        }
        let encoder = encoders.encoder(for: key, settings: media?.audio ?? AudioEncoding())
        let loss = recipients.lazy.map { $0.audio.reportedLossPercent }.max() ?? 0
        encoder?.expectedPacketLossPercent = loss
        let length = mix.samples.withUnsafeBufferPointer { pcm in
            encoders.payload.withUnsafeMutableBufferPointer { out in (try? encoder?.encode(pcm, into: out)) ?? 0 }
        }
        guard length > 0 else {
            for participant in recipients {
                participant.audio.moveOutbound(to: audioTicks)
                participant.audio.outbound.skipFrame()
                participant.audio.mixEncodeFailures &+= 1
            }
            return
        }
        encoders.encodes &+= 1
        if key == .full {
            encoders.fullPayload.removeAll(keepingCapacity: true)
            encoders.fullPayload.append(contentsOf: encoders.payload[0..<length])
            encoders.fullSources = mix.contributingSources
            if tapped { fullMixTap = encoders.fullPayload }
        }
        encoders.payload.withUnsafeBytes {
            deliver(UnsafeRawBufferPointer(rebasing: $0[0..<length]), mix: mix, to: recipients, relayed: false, now: now)
        }
    }

    /// The one sender's own packet for this tick when the mix is that sender alone: sent as
    /// it is, re-encoding what was just decoded would only cost time and quality. Not when
    /// the frame was concealed, FEC-recovered or not exactly 20 ms (then there is no single
    /// packet that stands for it).
    private func relayablePayload(of mix: AudioMixerTick<CallID>.Mix) -> [UInt8]? {
        guard mix.contributingSources.count == 1,
              let payload = participants[mix.contributingSources[0]]?.audio.receive.relayablePayload,
              !payload.isEmpty
        else { return nil }
        return payload
    }

    /// Packetises one payload on each recipient's own stream and sends it.
    private func deliver(_ payload: UnsafeRawBufferPointer, mix: AudioMixerTick<CallID>.Mix, to recipients: [Participant],
                         relayed: Bool, now: MediaTime) {
        let lanes = laneCount(forRecipients: recipients.count)
        if lanes > 1 {
            deliverInLanes(payload, mix: mix, to: recipients, relayed: relayed, lanes: lanes, now: now)
            return
        }
        for participant in recipients {
            participant.sendMix(payload, csrcs: mix.csrcs, csrcAudioLevels: mix.csrcAudioLevels, relayed: relayed,
                                tick: audioTicks, now: now, scratch: &mixPacket, transmits: &output.transmits)
        }
    }

    private func emitAudioEvent(_ event: AudioMixerEvent<CallID>, now: MediaTime) {
        switch event {
        case .talkingStarted(let id), .talkingStopped(let id):
            let started = if case .talkingStarted = event { true } else { false }
            participants[id]?.audio.talking = started
            emit(started ? .talkingStarted : .talkingStopped, participantFields(id))
        case .dominantSpeaker(let id):
            emit(.speakerDominant, id.map(participantFields) ?? ["callId": .null])
            if let id { noteDominantSpeaker(id, now: now) }
        }
    }

    func participantFields(_ id: CallID) -> [String: EventField] {
        var fields: [String: EventField] = ["callId": .string(id.rawValue)]
        if let user = participants[id]?.userId { fields["userId"] = .string(user.rawValue) }
        return fields
    }
}

extension Participant {
    /// This tick's input to the mixer: the next frame out of the jitter buffer (decoded, held
    /// undecoded, concealed or nothing) with its level. The same on the room's thread and on a
    /// lane; it touches only this participant.
    func mixerInput(now: MediaTime, wasSpeaker: Bool) -> AudioMixerInput {
        let established = state == .established
        let muted = audioMuted
        var input = AudioMixerInput(muted: muted, receivesAudio: established)
        if established {
            let frame = audio.nextFrame(now: now, isSpeaker: wasSpeaker, muted: muted)
            input.frame = frame.pcm.map { .int16($0) }
            input.audioLevel = frame.level
            input.undecoded = frame.undecoded
        }
        return input
    }
}
