import ChorusCore

extension RoomAudioMixer {
    /// The participants' input slots, for a room that makes its members' inputs on several
    /// threads at once (a big room's lanes): each thread hands in the inputs of its own
    /// members straight into their slots.
    ///
    /// Why: collecting the inputs in an array and handing them in one by one on the room's
    /// thread, after reading every member's speaker flag the same way first, was two serial
    /// passes over the room per tick: about a third of a 3,000-member room's input step ran on
    /// the room's thread while the lanes waited.
    ///
    /// `@unchecked Sendable` because it carries a pointer into the mixer's participant table
    /// across threads. Safe as `withConcurrentInputs` is used: the table is neither resized nor
    /// read by the mixer while `body` runs (the mixer is borrowed exclusively for the call),
    /// and each caller writes only the slots of its own handles, which are distinct for
    /// distinct participants.
    public struct ConcurrentInputs: @unchecked Sendable {
        let participants: UnsafeMutableBufferPointer<MixerEngine.ParticipantState>

        /// `setInput(for:_:)` for one participant: `makeInput` gets whether it was one of the
        /// mixed speakers at the last tick. False (and `makeInput` not called) for a stale
        /// handle.
        @discardableResult
        @_specialize(exported: true, where ID == CallID)
        public func setInput(for handle: Handle, _ makeInput: (_ wasSpeaker: Bool) -> AudioMixerInput) -> Bool {
            let slot = handle.slot
            guard participants.indices.contains(slot), participants[slot].occupied,
                  participants[slot].generation == handle.generation
            else { return false }
            participants[slot].apply(makeInput(participants[slot].wasSpeaker))
            return true
        }
    }

    /// Runs `body` with the participants' input slots (`ConcurrentInputs`); `body` may hand
    /// them to other threads for its duration, each writing disjoint handles.
    @_specialize(exported: true, where ID == CallID, Result == Void)
    public mutating func withConcurrentInputs<Result>(_ body: (ConcurrentInputs) throws -> Result) rethrows -> Result {
        try engine.participants.withUnsafeMutableBufferPointer { try body(ConcurrentInputs(participants: $0)) }
    }
}
