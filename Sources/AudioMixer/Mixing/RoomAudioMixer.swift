import ChorusCore

/// A room's audio mixer (MCU): every participant hears the room minus its own voice, the
/// `mixedSpeakers` loudest active speakers are mixed, and the room's encoding cost is at most
/// `mixedSpeakers + 1` encodes per tick whatever its size (see `MixPlan`).
///
/// Sans-IO and owned by the room (a value type on the room's queue). The room drives it:
/// - `addParticipant(_:ssrc:)` on join, keeping the returned `Handle`; `removeParticipant(_:)`
///   on leave;
/// - every 20 ms: `setInput(_:for:)` per participant (decoded frame, RFC 6464 level if sent,
///   muted), then `tick(now:)`, which returns an `AudioMixerTick`: the distinct mixes as 16-bit
///   PCM with recipients and CSRCs, and the talking / dominant-speaker events. The room encodes
///   each mix once and packetises it per recipient with `OutboundAudioStream`.
///
/// Per tick it runs, for every participant, the level (RFC 6464 or measured), the
/// `VoiceActivityDetector` and the `TalkingDetector`; then `SpeakerSelection`,
/// `DominantSpeakerDetector`, `MixPlan`, `AudioMixerCore` and a `SoftLimiter` per mix. All of it
/// runs on dense slot numbers in a non-generic engine; this wrapper only maps slots to IDs for
/// the output. After the participants' tables have grown, a tick does not allocate.
public struct RoomAudioMixer<ID: Hashable & Sendable>: Sendable {
    public typealias Configuration = AudioMixerConfiguration

    /// A participant's place in the mixer: O(1) access without hashing its ID. A handle of a
    /// participant that left is stale and ignored, even once its slot is reused.
    public struct Handle: Hashable, Sendable {
        /// The participant's slot: what `AudioMixerTick.Mix.recipientSlots` lists, so a caller
        /// may keep its own per-slot table instead of hashing IDs per recipient.
        public let slot: Int
        let generation: UInt32
    }

    var engine: MixerEngine
    /// The ID in each slot. A freed slot keeps its last ID until reused (the engine knows which
    /// slots are occupied): a non-optional array spares the tick an `Optional<ID>` metadata
    /// lookup per recipient in this unspecialised generic code.
    var ids: [ID] = []
    var handles: [ID: Handle] = [:]
    /// Events raised between ticks (a talking participant left), delivered with the next tick.
    var pendingEvents: [AudioMixerEvent<ID>] = []
    var output = AudioMixerTick<ID>()

    public init(configuration: Configuration = Configuration()) {
        engine = MixerEngine(configuration: configuration)
        output.pool = (0...configuration.mixedSpeakers).map { _ in AudioMixerTick<ID>.Mix() }
    }

    public var configuration: Configuration { engine.configuration }

    /// Whether the full mix is produced every tick even when every participant is a speaker
    /// (a recording or an RTP forward of the room takes it).
    public var alwaysMixFull: Bool {
        get { engine.alwaysMixFull }
        set { engine.alwaysMixFull = newValue }
    }

    /// Changes the number of mixed speakers (0…32) from the next tick on; speakers beyond a
    /// lowered limit leave the mix at once (quietest first), and their minus-one mixes with it.
    public mutating func setMixedSpeakers(_ count: Int) {
        engine.setMixedSpeakers(count)
        let mixes = engine.configuration.mixedSpeakers + 1
        if output.pool.count < mixes {
            output.pool.append(contentsOf: (output.pool.count..<mixes).map { _ in AudioMixerTick<ID>.Mix() })
        }
    }

    /// Participants currently in the mixer.
    public var participantCount: Int { handles.count }

    /// The handle of `id`, nil when it is not in the mixer.
    public func handle(for id: ID) -> Handle? { handles[id] }

    /// Adds a participant (or returns the handle it already has). `ssrc` is the SSRC of its
    /// microphone stream, used as its CSRC in the mixes it contributes to.
    @discardableResult
    public mutating func addParticipant(_ id: ID, ssrc: SSRC? = nil) -> Handle {
        if let existing = handles[id] {
            if let ssrc { engine.setSSRC(ssrc, slot: existing.slot) }
            return existing
        }
        let (slot, generation) = engine.addSlot(ssrc: ssrc)
        if slot < ids.count { ids[slot] = id } else { ids.append(id) }
        let handle = Handle(slot: slot, generation: generation)
        handles[id] = handle
        return handle
    }

    /// Removes a participant that left; a `talking.stopped` for it comes with the next tick if
    /// it was talking. Unknown IDs are ignored.
    public mutating func removeParticipant(_ id: ID) {
        guard let handle = handles.removeValue(forKey: id) else { return }
        if engine.removeSlot(handle.slot) { pendingEvents.append(.talkingStopped(id)) }
    }

    /// Sets the SSRC a participant contributes under (learnt from its first packet, say).
    @discardableResult
    public mutating func setSSRC(_ ssrc: SSRC?, for handle: Handle) -> Bool {
        guard engine.isCurrent(slot: handle.slot, generation: handle.generation) else { return false }
        engine.setSSRC(ssrc, slot: handle.slot)
        return true
    }

    /// Whether `id` was one of the mixed speakers at the last tick (the room asks its decoder
    /// for comfort noise only then).
    public func isSpeaker(_ id: ID) -> Bool {
        guard let handle = handles[id], engine.isCurrent(slot: handle.slot, generation: handle.generation) else {
            return false
        }
        return engine.participants[handle.slot].wasSpeaker
    }

    /// Hands in a participant's input for the next tick; false (and ignored) for a stale handle.
    @discardableResult
    @_specialize(exported: true, where ID == CallID)
    public mutating func setInput(_ input: AudioMixerInput, for handle: Handle) -> Bool {
        guard engine.isCurrent(slot: handle.slot, generation: handle.generation) else { return false }
        engine.setInput(input, slot: handle.slot)
        return true
    }

    /// Hands in a participant's input built by `makeInput` from whether it was one of the mixed
    /// speakers at the last tick (what `isSpeaker` says), without hashing an ID; false (and
    /// `makeInput` not called) for a stale handle. One in-place access: a room asking
    /// `isSpeaker` and then `setInput` per participant and tick paid a hash each and, from
    /// outside the module, a copy of the whole mixer for the non-mutating call.
    @discardableResult
    @_specialize(exported: true, where ID == CallID)
    public mutating func setInput(for handle: Handle, _ makeInput: (_ wasSpeaker: Bool) -> AudioMixerInput) -> Bool {
        guard let wasSpeaker = wasSpeaker(handle) else { return false }
        engine.setInput(makeInput(wasSpeaker), slot: handle.slot)
        return true
    }

    /// Whether the handle's participant was a mixed speaker at the last tick; nil when the
    /// handle is stale.
    private func wasSpeaker(_ handle: Handle) -> Bool? {
        guard engine.isCurrent(slot: handle.slot, generation: handle.generation) else { return nil }
        return engine.participants[handle.slot].wasSpeaker
    }

    /// Same as `setInput(_:for:)` with a handle, at the cost of hashing `id`.
    @discardableResult
    public mutating func setInput(_ input: AudioMixerInput, for id: ID) -> Bool {
        guard let handle = handles[id] else { return false }
        return setInput(input, for: handle)
    }
}
