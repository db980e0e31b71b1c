import ChorusCore

/// When one slot moves between its publisher's simulcast layers (issue 16, item 3), given the
/// layer `LayerAllocator` chose for it: down at once (the link is already short, and every
/// packet over it delays the audio too), up only after the current layer has been held
/// `holdNanoseconds` and no bandwidth-forced move down happened in the last
/// `upgradeQuietNanoseconds` (an estimate that just fell is not trusted to rise at once; a
/// flapping layer costs a keyframe each way). A move is a request: the room asks the publisher
/// for the target layer's keyframe and switches on it, then calls `switched(to:now:)`.
///
/// Sans-IO: the room calls `decide(allocated:now:)` when it reallocates, and `switched` when a
/// slot starts forwarding a layer.
public struct LayerSwitchPolicy: Sendable, Equatable {
    public static let holdNanoseconds: UInt64 = 2_000_000_000
    public static let upgradeQuietNanoseconds: UInt64 = 8_000_000_000
    /// Decisions in a row that nothing fits before a slot is paused: an estimate dips after
    /// every back-off and a layer's bitrate peaks on keyframes, and a pause costs a keyframe to
    /// undo, so one short budget is not enough (about 3 s at one allocation a second).
    public static let shortfallsBeforePause = 3

    /// What the slot should do now.
    public enum Decision: Sendable, Equatable {
        /// Keep what it forwards (or keep waiting for the keyframe it asked for).
        case stay
        /// Ask for this layer's keyframe and move there on it.
        case move(to: Int)
        /// Forward nothing: not even the lowest layer fits (`video.slots`, reason `bandwidth`).
        case pause
    }

    /// The layer forwarded now; nil before the first, or while paused.
    public private(set) var current: Int?
    /// The layer asked for and not yet switched to.
    public private(set) var pending: Int?
    public private(set) var lastSwitchAt: MediaTime?
    public private(set) var lastDowngradeAt: MediaTime?
    /// Moves made, for the participant's counters.
    public private(set) var switches: UInt64 = 0
    /// Decisions in a row where nothing fitted.
    public private(set) var shortfalls = 0

    public init() {}

    /// The decision for `allocated` (nil: nothing fits). `rank` orders layers by quality (a
    /// publisher's layer indices follow its offer, not its resolutions); by index by default.
    /// `forcedByBandwidth` false: the subscriber capped the slot's height, so a move down says
    /// nothing of its link and does not hold back the next move up.
    public mutating func decide(allocated: Int?, now: MediaTime, forcedByBandwidth: Bool = true,
                                rank: (Int) -> Int = { $0 }) -> Decision {
        guard let allocated else {
            shortfalls += 1
            guard shortfalls >= Self.shortfallsBeforePause || (current == nil && pending == nil) else { return .stay }
            pending = nil
            if current != nil { lastDowngradeAt = now }
            current = nil
            return .pause
        }
        shortfalls = 0
        let reference = pending ?? current
        guard let reference else {
            // Paused for bandwidth: resume once the pause has lasted the hold time.
            if let down = lastDowngradeAt, now.nanoseconds(since: down) < Self.holdNanoseconds { return .pause }
            pending = allocated
            return .move(to: allocated)
        }
        if allocated != reference && rank(allocated) < rank(reference) {
            pending = allocated == current ? nil : allocated
            if forcedByBandwidth { lastDowngradeAt = now }
            return allocated == current ? .stay : .move(to: allocated)
        }
        guard allocated != reference, rank(allocated) > rank(reference), canMoveUp(now: now) else { return .stay }
        pending = allocated
        return .move(to: allocated)
    }

    /// The slot now forwards `layer` (its keyframe arrived).
    public mutating func switched(to layer: Int, now: MediaTime) {
        if current != layer { switches &+= 1 }
        current = layer
        if pending == layer { pending = nil }
        lastSwitchAt = now
    }

    private func canMoveUp(now: MediaTime) -> Bool {
        if let last = lastSwitchAt, now.nanoseconds(since: last) < Self.holdNanoseconds { return false }
        if let down = lastDowngradeAt, now.nanoseconds(since: down) < Self.upgradeQuietNanoseconds { return false }
        return true
    }
}

extension LayerSwitchPolicy {
    /// A layer and the highest temporal layer (TID) forwarded of it, as the one number
    /// `decide` and `switched` take: `4 × layer + TID`, TID 0…3 (3: all of them, as for a layer
    /// without temporal layers). With `rank(step) = 4 × (the layer's quality rank) + TID`, the
    /// steps of one layer come before those of the next better one.
    public static func step(layer: Int, temporalLayer: UInt8) -> Int {
        layer &* 4 &+ Int(min(temporalLayer, TemporalLayerFilter.allLayers))
    }

    /// The layer of a `step` (floor division: a negative layer, "none", stays negative).
    public static func layer(ofStep step: Int) -> Int { step >> 2 }

    /// The highest TID of a `step`.
    public static func temporalLayer(ofStep step: Int) -> UInt8 { UInt8(step & 3) }
}
