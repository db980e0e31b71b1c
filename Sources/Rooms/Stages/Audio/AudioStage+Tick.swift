import AudioMixer
import ChorusCore

/// What one audio tick gives the rest of the room: the new dominant speaker (the video stage
/// ranks slots by it) and the full mix's packet when something taps it (a recording, a forward).
struct AudioTickResult {
    /// Set when the dominant speaker changed this tick (the inner nil: nobody dominates).
    var dominantSpeaker: CallID??
    /// The full mix as Opus, when `tapsFullMix` and the mix was not silent.
    var fullMix: [UInt8]?
}

extension AudioStage {
    /// One 20 ms audio tick at `now`: one frame per member out of its jitter buffer, the top
    /// speakers mixed, each distinct mix encoded once per encoding, each listener sent its mix
    /// on its own stream. Talking and dominant-speaker changes become events.
    mutating func tick(now: MediaTime, into output: inout RoomOutput) -> AudioTickResult {
        ticks &+= 1
        let lanes = laneCount(forRecipients: members.count)
        let mayHold = !hasPlainListeners
        if lanes > 1 {
            feedMixerInLanes(lanes, now: now, mayHold: mayHold)
        } else {
            for member in members {
                mixer.setInput(for: member.mixerHandle) { member.mixerInput(now: now, wasSpeaker: $0, mayHold: mayHold) }
            }
        }
        let tick = mixer.tick(now: now) { [membersBySlot] slot in
            guard membersBySlot.indices.contains(slot), let member = membersBySlot[slot] else { return nil }
            return member.decodeHeldFrame().map { .int16($0) }
        }
        encoders.beginTick()
        encoders.continueFullStream(into: tick.mixes, settings: encoding)
        var result = AudioTickResult()
        var live = Set<MixEncoders.Key>()
        for mix in tick.mixes {
            let key: MixEncoders.Key = if case .minusOne(let id) = mix.kind { .minusOne(id) } else { .full }
            live.insert(key)
            send(mix, key: key, now: now, fullMix: &result.fullMix, into: &output)
        }
        encoders.retain(live)
        for event in tick.events { note(event, at: now, result: &result, into: &output) }
        departedTalkers.removeAll()
        return result
    }

    /// The members a mix goes to, by the mixer's slots: those that hear mixes now.
    private func recipients(of mix: AudioMixerTick<CallID>.Mix) -> [MemberAudio] {
        var recipients: [MemberAudio] = []
        recipients.reserveCapacity(mix.recipientSlots.count)
        for slot in mix.recipientSlots where membersBySlot.indices.contains(slot) {
            if let member = membersBySlot[slot], member.hearsMixes { recipients.append(member) }
        }
        return recipients
    }

    private mutating func send(_ mix: AudioMixerTick<CallID>.Mix, key: MixEncoders.Key, now: MediaTime,
                               fullMix: inout [UInt8]?, into output: inout RoomOutput) {
        // A silent mix sends nothing, and its recipients learn of it with their next frame
        // (`MemberAudio.outboundTick`): in a big room's pauses nobody is touched.
        if mix.isSilent { return }
        var recipients = recipients(of: mix)
        // A recording or an RTP forward takes the full mix even when nobody else does.
        let tapped = key == .full && tapsFullMix
        guard !recipients.isEmpty || tapped else { return }
        if hasPlainListeners {
            let plain = recipients.filter { $0.outFormat?.codec != .opus }
            recipients.removeAll { $0.outFormat?.codec != .opus }
            sendPlain(mix, key: key, to: plain, now: now, into: &output)
            guard !recipients.isEmpty || tapped else { return }
        }
        sendOpus(mix, key: key, to: recipients, tapped: tapped, now: now, fullMix: &fullMix, into: &output)
    }

    /// The mix for its Opus listeners: a lone sender's own packet as it is, the full mix's
    /// encode again for a speaker who hears exactly that, or one encode shared by them all.
    private mutating func sendOpus(_ mix: AudioMixerTick<CallID>.Mix, key: MixEncoders.Key, to recipients: [MemberAudio],
                                   tapped: Bool, now: MediaTime, fullMix: inout [UInt8]?, into output: inout RoomOutput) {
        if let relayed = relayablePayload(of: mix) {
            if tapped { fullMix = relayed }
            relayed.withUnsafeBytes { deliver($0, mix: mix, to: recipients, relayed: true, now: now, into: &output) }
            return
        }
        if key != .full, encoders.fullSources == mix.contributingSources {
            if case .minusOne(let id) = key { encoders.noteHeardFullEncode(id) }
            let payload = encoders.fullPayload
            payload.withUnsafeBytes { deliver($0, mix: mix, to: recipients, relayed: false, now: now, into: &output) }
            return
        }
        let encoder = encoders.encoder(for: key, settings: encoding)
        encoder?.expectedPacketLossPercent = recipients.lazy.map(\.reportedLossPercent).max() ?? 0
        let length = mix.samples.withUnsafeBufferPointer { pcm in
            encoders.payload.withUnsafeMutableBufferPointer { out in (try? encoder?.encode(pcm, into: out)) ?? 0 }
        }
        guard length > 0 else {
            failedEncode(for: recipients)
            return
        }
        encoders.encodes &+= 1
        if key == .full {
            encoders.fullPayload.removeAll(keepingCapacity: true)
            encoders.fullPayload.append(contentsOf: encoders.payload[0..<length])
            encoders.fullSources = mix.contributingSources
            if tapped { fullMix = encoders.fullPayload }
        }
        let payload = encoders.payload
        payload.withUnsafeBytes {
            deliver(UnsafeRawBufferPointer(rebasing: $0[0..<length]), mix: mix, to: recipients, relayed: false, now: now,
                    into: &output)
        }
    }

    /// The mix for listeners in other encodings (a phone's PCM at its rate): one encode per
    /// encoding, shared by its listeners.
    private mutating func sendPlain(_ mix: AudioMixerTick<CallID>.Mix, key: MixEncoders.Key, to recipients: [MemberAudio],
                                    now: MediaTime, into output: inout RoomOutput) {
        var groups: [AudioFormat.Encoding: [MemberAudio]] = [:]
        var formats: [AudioFormat.Encoding: AudioFormat] = [:]
        for member in recipients {
            guard let format = member.outFormat else { continue }
            groups[format.encoding, default: []].append(member)
            formats[format.encoding] = format
        }
        for (encoding, listeners) in groups {
            guard let format = formats[encoding], let encoder = encoders.plainEncoder(for: key, format: format) else {
                failedEncode(for: listeners)
                continue
            }
            let length = mix.samples.withUnsafeBufferPointer { pcm in
                encoders.payload.withUnsafeMutableBufferPointer { out in (try? encoder.encode(pcm, into: out)) ?? 0 }
            }
            guard length > 0 else {
                failedEncode(for: listeners)
                continue
            }
            encoders.encodes &+= 1
            let payload = encoders.payload
            payload.withUnsafeBytes {
                deliver(UnsafeRawBufferPointer(rebasing: $0[0..<length]), mix: mix, to: listeners, relayed: false,
                        now: now, into: &output)
            }
        }
    }

    /// No payload this tick for these listeners (never expected; counted so a stall shows why).
    private func failedEncode(for recipients: [MemberAudio]) {
        for member in recipients {
            member.moveOutbound(to: ticks)
            member.outbound.skipFrame()
            member.mixEncodeFailures &+= 1
        }
    }

    /// The one sender's own packet for this tick when the mix is that sender alone and it sends
    /// Opus: sent as it is, re-encoding what was just decoded would only cost time and quality.
    /// Not when the frame was concealed, FEC-recovered or not exactly 20 ms (then there is no
    /// single packet that stands for it).
    private func relayablePayload(of mix: AudioMixerTick<CallID>.Mix) -> [UInt8]? {
        guard mix.contributingSources.count == 1, let handle = mixer.handle(for: mix.contributingSources[0]),
              let sender = member(handle), sender.inFormat?.codec == .opus,
              let payload = sender.receive.relayablePayload, !payload.isEmpty
        else { return nil }
        return payload
    }

    /// Packetises one payload on each recipient's own stream and sends it.
    private mutating func deliver(_ payload: UnsafeRawBufferPointer, mix: AudioMixerTick<CallID>.Mix,
                                  to recipients: [MemberAudio], relayed: Bool, now: MediaTime,
                                  into output: inout RoomOutput) {
        let lanes = laneCount(forRecipients: recipients.count)
        if lanes > 1 {
            deliverInLanes(payload, mix: mix, to: recipients, relayed: relayed, lanes: lanes, now: now, into: &output)
            return
        }
        for member in recipients {
            member.sendMix(payload, csrcs: mix.csrcs, csrcAudioLevels: mix.csrcAudioLevels, relayed: relayed,
                           tick: ticks, now: now, scratch: &mixPacket, transmits: &output.transmits)
        }
    }

    /// A talking or dominant-speaker change: an event, and the member's own talk time.
    private func note(_ event: AudioMixerEvent<CallID>, at now: MediaTime, result: inout AudioTickResult,
                      into output: inout RoomOutput) {
        switch event {
        case .talkingStarted(let id), .talkingStopped(let id):
            let started = if case .talkingStarted = event { true } else { false }
            let member = mixer.handle(for: id).flatMap(member)
            member?.talking = started
            let who = EventMember(callId: id, userId: member?.userId ?? departedTalkers[id])
            output.emit(started ? .talkingStarted(who) : .talkingStopped(who), at: now)
        case .dominantSpeaker(let id):
            output.emit(.speakerDominant(id.map { EventMember(callId: $0, userId: mixer.handle(for: $0).flatMap(member)?.userId) }),
                        at: now)
            result.dominantSpeaker = .some(id)
        }
    }
}
