import ChorusCore

extension MixerEngine {
    /// Level, voice activity and talking state of every participant; fills `candidates`.
    mutating func measureLevels(now: MediaTime) {
        // Swapped out (no copy), so the loop can mutate `participants` in place.
        var candidates: [SpeakerCandidate<Int>] = []
        swap(&candidates, &self.candidates)
        candidates.removeAll(keepingCapacity: true)
        for slot in participants.indices where participants[slot].occupied {
            let level: Float
            var active: Bool
            if let indication = participants[slot].audioLevel {
                // The client's level, judged by our own detector. The V bit is ignored: aiortc
                // sends V=0 on every packet and Chrome's depends on its DTX setting, so trusting
                // it (even only to veto) made speakers flap with packet timing. Jitsi and
                // LiveKit decide on the level alone as well.
                level = indication.dBov
                active = participants[slot].vad.update(levelDBov: level)
            } else {
                level = Self.measure(participants[slot].frame)
                active = participants[slot].vad.update(levelDBov: level)
            }
            let muted = participants[slot].muted
            if muted { active = false }
            participants[slot].levelDBov = level
            participants[slot].voiceActive = active
            switch participants[slot].talking.update(voiceActive: active, muted: muted, at: now) {
            case .started?: events.append(.talkingStarted(slot))
            case .stopped?: events.append(.talkingStopped(slot))
            case nil: break
            }
            candidates.append(SpeakerCandidate(id: slot, levelDBov: level, voiceActive: active, muted: muted))
        }
        swap(&candidates, &self.candidates)
    }

    private static func measure(_ frame: AudioMixerInput.Frame?) -> Float {
        switch frame {
        case .int16(let samples)?: return AudioLevel.dBov(of: samples)
        case .float(let samples)?: return AudioLevel.dBov(of: samples)
        case nil: return AudioLevel.silenceDBov
        }
    }

    /// Flags this tick's speakers. A newcomer's own-mix limiter starts from the full mix
    /// limiter's state: until now this participant heard the full mix through it.
    mutating func markSpeakers() {
        for slot in previousSpeakers where participants[slot].occupied { participants[slot].isSpeaker = false }
        for slot in selection.speakers {
            participants[slot].isSpeaker = true
            if !participants[slot].wasSpeaker { participants[slot].limiter = fullMixLimiter }
        }
    }

    /// Lists the full mix's recipients and plans the tick's mixes.
    mutating func planMixes() {
        listeners.removeAll(keepingCapacity: true)
        for slot in participants.indices
        where participants[slot].occupied && participants[slot].receivesAudio && !participants[slot].isSpeaker {
            listeners.append(slot)
        }
        // Planned on a local value, so the closure may read `self`.
        var plan = MixPlan<Int>()
        swap(&plan, &self.plan)
        // A recording hears the full mix even when nobody else does (everyone a speaker).
        plan.update(speakers: selection.speakers, listenerCount: listeners.count + (alwaysMixFull ? 1 : 0)) {
            participants[$0].receivesAudio
        }
        swap(&plan, &self.plan)
    }

    /// Asks for the undecoded speakers' samples when another speaker is audible too: then
    /// every mix they are in is a real mix. A lone audible speaker stays undecoded: it is the
    /// full mix's only contributor (relayed as its own packet) and its own mix is silent. An
    /// undecoded speaker whose own level says silence contributes nothing, as its decoded
    /// silence would not.
    mutating func decodeSpeakersIfMixed(_ decode: (Int) -> AudioMixerInput.Frame?) {
        var undecoded = 0
        for slot in selection.speakers where participants[slot].undecoded {
            guard participants[slot].levelDBov > Self.inaudibleDBov else {
                participants[slot].undecoded = false  // silence by its own level: nothing to mix
                continue
            }
            undecoded += 1
        }
        // Decoded speakers are scanned for audio only when that decides it (one undecoded).
        guard undecoded > 1 || (undecoded == 1 && selection.speakers.contains { slot in
            !participants[slot].undecoded && participants[slot].frame.map { !Self.isInaudible($0) } == true
        }) else { return }
        for slot in selection.speakers where participants[slot].undecoded {
            participants[slot].frame = decode(slot)
            participants[slot].undecoded = false
        }
    }

    /// Loads the speakers' frames into the core and lists the contributors, loudest first. An
    /// undecoded speaker (see `decodeSpeakersIfMixed`) is a contributor without samples.
    ///
    /// A speaker whose frame is inaudible this tick (a pause between words that decoded to
    /// digital silence) contributes nothing: its own mix is then the full mix, which the room
    /// sends it without a second encode, and a mix left with one contributor is relayed. Comfort
    /// noise and a real microphone's floor stay above the bound, so pauses keep their
    /// background (no noise pumping); only silence is taken out.
    mutating func loadSources() {
        core.beginFrame()
        contributors.removeAll(keepingCapacity: true)
        for slot in selection.speakers {
            let index: Int?
            switch participants[slot].frame {
            case .int16(let samples)?: index = Self.isInaudible(samples) ? nil : core.addSource(samples)
            case .float(let samples)?: index = Self.isInaudible(samples) ? nil : core.addSource(samples)
            case nil: index = nil
            }
            participants[slot].sourceIndex = index
            guard index != nil || participants[slot].undecoded else { continue }
            let level = participants[slot].levelDBov
            var position = contributors.count
            while position > 0, participants[contributors[position - 1]].levelDBov < level { position -= 1 }
            contributors.insert(slot, at: position)
        }
    }

    static func isInaudible(_ frame: AudioMixerInput.Frame) -> Bool {
        switch frame {
        case .int16(let samples): isInaudible(samples)
        case .float(let samples): isInaudible(samples)
        }
    }

    /// Peak at or below `inaudiblePeak` (about -66 dBFS): what a decoder makes of silence.
    static func isInaudible(_ samples: [Int16]) -> Bool {
        samples.withUnsafeBufferPointer { AudioLevel.peak(of: $0) } <= inaudiblePeak
    }

    static func isInaudible(_ samples: [Float]) -> Bool {
        let bound = Float(inaudiblePeak) / AudioLevel.int16FullScale
        return samples.allSatisfy { abs($0) <= bound }
    }

    /// 16 of 32,767: below any microphone's noise floor and any comfort noise, above the
    /// ±1–2 LSB a decoder may leave in silence.
    static let inaudiblePeak = 16
    /// The same bound for a level the client reports (RFC 6464, the frame's RMS): an undecoded
    /// frame at or below it is taken as the silence it would decode to. Noise, whose peak is
    /// ~3.3 times its RMS over a frame, peaks at 16 at about -77 dBov: a quiet microphone's floor
    /// stays in, as it does when decoded (at -66, a floor between the two was dropped from a lone
    /// talker's relayed stream while kept in a mix: pumping, and 15 % fewer packets sent to a
    /// viewer of a Chromium's fake microphone).
    static let inaudibleDBov: Float = -78
}
