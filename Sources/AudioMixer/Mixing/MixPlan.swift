/// Which distinct mixes one tick produces and which recipient hears which: the rule that bounds
/// the room's encoding cost by its speakers, not its size.
///
/// Every mixed speaker hears the mix minus itself (its own "minus one" mix); every other
/// participant shares one encode of the full mix. A mix nobody receives is not produced: the
/// full mix when everyone is a speaker, a speaker's own mix when it receives no audio. So a
/// tick has at most `speakers + 1` mixes (encodes), whatever the number of participants.
///
/// Driven by `update(speakers:listenerCount:isReceiving:)` once per tick after
/// `SpeakerSelection`; `mixes` lists the full mix first (when produced), then the minus-one
/// mixes in speaker order. Looking a recipient up scans the speakers (at most 16).
public struct MixPlan<ID: Hashable & Sendable>: Sendable, Equatable {
    /// One distinct mix.
    public enum Mix: Hashable, Sendable {
        /// All mixed speakers: for every participant that is not one of them.
        case full
        /// All mixed speakers but this one: for that speaker only.
        case minusOne(ID)
    }

    /// The tick's mixed speakers, in `SpeakerSelection` order.
    public private(set) var speakers: [ID] = []
    /// The mixes to render and encode this tick.
    public private(set) var mixes: [Mix] = []

    public init() {}

    /// Plans one tick. `listenerCount` is the number of receiving participants that are not
    /// speakers (the full mix's audience); `isReceiving` says whether a speaker receives audio.
    public mutating func update(speakers: [ID], listenerCount: Int, isReceiving: (ID) -> Bool = { _ in true }) {
        self.speakers.removeAll(keepingCapacity: true)
        mixes.removeAll(keepingCapacity: true)
        for speaker in speakers where !self.speakers.contains(speaker) { self.speakers.append(speaker) }
        if listenerCount > 0 { mixes.append(.full) }
        for speaker in self.speakers where isReceiving(speaker) { mixes.append(.minusOne(speaker)) }
    }

    /// Number of encodes this tick: one per mix.
    public var encodeCount: Int { mixes.count }

    /// The mix `recipient` hears: its own minus-one mix when it is a speaker, else the full mix.
    public func mix(for recipient: ID) -> Mix {
        speakers.contains(recipient) ? .minusOne(recipient) : .full
    }

    /// Index in `mixes` of the mix `recipient` hears; nil when that mix is not produced (the
    /// plan was told the recipient receives nothing).
    public func mixIndex(for recipient: ID) -> Int? {
        mixes.firstIndex(of: mix(for: recipient))
    }

    /// The speakers whose audio `mix` contains, in speaker order.
    public func sources(of mix: Mix) -> [ID] {
        switch mix {
        case .full: return speakers
        case .minusOne(let excluded): return speakers.filter { $0 != excluded }
        }
    }
}
