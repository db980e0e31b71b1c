import ChorusCore

extension RoomAudioMixer {
    /// Runs one 20 ms tick over the inputs set since the last one and returns the mixes to
    /// encode and the events. Frames and levels are consumed; a participant without input this
    /// tick is silent. Missed ticks (a late timer) are caught up by calling `tick` once per
    /// missed frame: the detectors count ticks as 20 ms each.
    ///
    /// `decode` gives the samples of an `undecoded` input when a mix needs them (see
    /// `AudioMixerInput.undecoded`), by the participant's handle slot; nil leaves that speaker
    /// silent this tick.
    ///
    /// Pre-specialised for the rooms' `CallID`: unspecialised, the generic tick looked up type
    /// metadata for each event and recipient (about 2 % of a 1 x 40 room's CPU in `perf`).
    @_specialize(exported: true, where ID == CallID)
    public mutating func tick(
        now: MediaTime, decode: (_ slot: Int) -> AudioMixerInput.Frame? = { _ in nil }
    ) -> AudioMixerTick<ID> {
        engine.prepare(now: now, decode: decode)
        publishEvents()
        output.mixCount = engine.plan.mixes.count
        for index in 0..<output.mixCount {
            var mix = AudioMixerTick<ID>.Mix(frameLength: 0)
            swap(&mix, &output.pool[index])  // filled outside `output`, without a copy
            fill(&mix, index: index)
            swap(&mix, &output.pool[index])
        }
        output.speakers.removeAll(keepingCapacity: true)
        for slot in engine.speakers { output.speakers.append(id(at: slot)) }
        engine.finish()
        return output
    }

    private mutating func publishEvents() {
        output.events.removeAll(keepingCapacity: true)
        output.events.append(contentsOf: pendingEvents)
        pendingEvents.removeAll(keepingCapacity: true)
        for event in engine.events {
            switch event {
            case .talkingStarted(let slot): output.events.append(.talkingStarted(id(at: slot)))
            case .talkingStopped(let slot): output.events.append(.talkingStopped(id(at: slot)))
            case .dominantSpeaker(let slot): output.events.append(.dominantSpeaker(slot.map { id(at: $0) }))
            }
        }
        output.dominantSpeaker = engine.dominantSpeaker.map { id(at: $0) }
    }

    private mutating func fill(_ mix: inout AudioMixerTick<ID>.Mix, index: Int) {
        mix.startsFromFullMix = engine.render(
            index, into: &mix.samples, csrcs: &mix.csrcs, levels: &mix.csrcAudioLevels)
        let excluded: Int?
        mix.recipients.removeAll(keepingCapacity: true)
        mix.recipientSlots.removeAll(keepingCapacity: true)
        switch engine.plan.mixes[index] {
        case .full:
            excluded = nil
            mix.kind = .full
            for slot in engine.listeners { mix.recipients.append(id(at: slot)) }
            mix.recipientSlots.append(contentsOf: engine.listeners)
        case .minusOne(let slot):
            excluded = slot
            mix.kind = .minusOne(id(at: slot))
            mix.recipients.append(id(at: slot))
            mix.recipientSlots.append(slot)
        }
        mix.contributingSources.removeAll(keepingCapacity: true)
        for slot in engine.contributors where slot != excluded { mix.contributingSources.append(id(at: slot)) }
    }

    /// The ID in a slot; the engine only reports occupied slots.
    private func id(at slot: Int) -> ID { ids[slot] }
}
