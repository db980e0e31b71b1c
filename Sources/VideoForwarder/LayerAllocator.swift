/// Shares one subscriber's downlink among its video slots (issue 16, item 3): for each slot,
/// which of its publisher's simulcast layers to forward, or none (the slot is paused for
/// bandwidth). A pure function of the budget and the slots' demands, called by the room about
/// once a second per subscriber; `LayerSwitchPolicy` then decides when a slot actually moves.
///
/// The order follows what a viewer notices first: the budget is what remains after the audio
/// mix (the caller reserves it); every slot, in priority order (the dominant speaker's first),
/// first gets its lowest layer if that still fits, so a thin link pauses the least important
/// slots rather than starving all of them; then, again in priority order, each slot moves up to
/// the best layer the rest of the budget and its requested height allow.
///
/// Temporal layers (VP8): a layer whose temporal layers' rates are known is a ladder of steps,
/// one per target TID (its rate with TID ≤ 0, ≤ 1, …), and the steps of all layers form one
/// quality order: layer 0 at TID 0, 1, 2, then layer 1 at TID 0, 1, 2, and so on, as mediasoup
/// walks them. "Lowest" and "up" above mean steps: a slot whose budget falls short of its
/// layer's full rate first drops that layer's top temporal layers, and moves down a layer only
/// when even its base temporal layer does not fit; a thin link keeps the lowest layer at a
/// quarter of its frame rate before the slot is paused.
public enum LayerAllocator {
    /// A layer above the slot's current one must fit with this much to spare.
    public static let upgradeHeadroom = 1.2
    /// A slot that already forwards a layer keeps its lowest one while the budget covers this
    /// share of it: an estimate saw-tooths ~15 % below a link's rate after every back-off
    /// (GCC's 0.85 decrease), and a pause costs a freeze and a keyframe to undo, so the lowest
    /// layer is given up only on a clear shortfall (the hysteresis of the pause).
    public static let keepLowestFraction = 0.75
    /// Likewise for a higher layer a slot forwards at its base temporal layer (or without
    /// temporal layers): it is kept while the budget covers this share of it. One delay-based back-off sets the estimate to 85 % of what was acknowledged,
    /// below the layer that was being carried, so without this every overuse signal (one late
    /// burst on a busy host is enough) dropped the top layer; a link that is really thinner backs
    /// off again (to 72 %) and the layer goes.
    public static let keepCurrentFraction = 0.8

    /// One layer a publisher sends, as measured arriving: bit/s and picture height (0 when not
    /// known yet, which no height cap excludes).
    public struct Layer: Sendable, Equatable {
        public var bitrate: Int
        public var height: Int
        /// Its rate when forwarding TID ≤ 0, ≤ 1, … (`TemporalLayerBitrates`); empty for a layer
        /// without temporal layers, which is one step at `bitrate`.
        public var temporalBitrates: [Int]

        public init(bitrate: Int, height: Int = 0, temporalBitrates: [Int] = []) {
            self.bitrate = max(bitrate, 0)
            self.height = max(height, 0)
            self.temporalBitrates = Array(temporalBitrates.prefix(Int(TemporalLayerFilter.allLayers) + 1)).map { max($0, 0) }
        }
    }

    /// What a slot forwards: a layer (index into its demand's `layers`) and the highest
    /// temporal layer of it (index into its `temporalBitrates`; 0 without them).
    public struct Choice: Sendable, Equatable {
        public var layer: Int
        public var temporalLayer: Int
        /// True when this is the layer's top step: every temporal layer is forwarded.
        public var allTemporalLayers: Bool

        public init(layer: Int, temporalLayer: Int, allTemporalLayers: Bool) {
            self.layer = layer
            self.temporalLayer = temporalLayer
            self.allTemporalLayers = allTemporalLayers
        }
    }

    /// What one slot could show: its publisher's layers from lowest to highest (the ones being
    /// received now; a layer that stopped is left out), the tallest picture the client wants
    /// in it (nil: no cap), and its rank (0 first: the dominant speaker's slot).
    public struct Demand: Sendable, Equatable {
        public var layers: [Layer]
        public var maximumHeight: Int?
        public var priority: Int
        /// The layer (index into `layers`) the slot forwards now, if any: going above it needs
        /// `upgradeHeadroom` more than the layer's bitrate, so that an estimate at the edge of a
        /// layer does not flap the slot between two.
        public var current: Int?
        /// The highest temporal layer of `current` forwarded now (index into its
        /// `temporalBitrates`); nil: all of them.
        public var currentTemporalLayer: Int?

        public init(layers: [Layer], maximumHeight: Int? = nil, priority: Int, current: Int? = nil,
                    currentTemporalLayer: Int? = nil) {
            self.layers = layers
            self.maximumHeight = maximumHeight
            self.priority = priority
            self.current = current
            self.currentTemporalLayer = currentTemporalLayer
        }

        /// The highest layer the height cap allows; the lowest always qualifies, since a cap
        /// below every layer still wants a picture (the client scales it down).
        public var tallestAllowed: Int {
            guard let cap = maximumHeight else { return layers.count - 1 }
            var best = 0
            for (index, layer) in layers.enumerated() where layer.height == 0 || layer.height <= cap { best = index }
            return best
        }
    }

    /// The layer index for each demand, in the demands' order; nil for a slot that gets none
    /// (no layers, or not even its lowest layer fits).
    public static func allocate(budget: Int, demands: [Demand]) -> [Int?] {
        allocateSteps(budget: budget, demands: demands).map { $0?.layer }
    }

    /// The layer and temporal layer for each demand, in the demands' order; nil for a slot that
    /// gets none (no layers, or not even its lowest step fits).
    public static func allocateSteps(budget: Int, demands: [Demand]) -> [Choice?] {
        let ladders = demands.map(Ladder.init)
        var remaining = max(budget, 0)
        var chosen = [Int?](repeating: nil, count: demands.count)
        let order = demands.indices.sorted { (demands[$0].priority, $0) < (demands[$1].priority, $1) }
        for index in order {
            guard let lowest = ladders[index].steps.first else { continue }
            let kept = ladders[index].current != nil
            let need = kept ? Int(Double(lowest.bitrate) * keepLowestFraction) : lowest.bitrate
            guard need <= remaining else { continue }
            chosen[index] = 0
            remaining -= min(lowest.bitrate, remaining)
        }
        for index in order {
            guard let current = chosen[index] else { continue }
            let best = ladders[index].bestStep(above: current, remaining: remaining)
            remaining -= min(ladders[index].steps[best].bitrate - ladders[index].steps[current].bitrate, remaining)
            chosen[index] = best
        }
        return chosen.indices.map { index in chosen[index].map { ladders[index].steps[$0].choice } }
    }

    /// The lowest step of `demand` (its lowest layer's base temporal layer), nil without layers:
    /// where a slot paused for bandwidth resumes.
    public static func lowestChoice(of demand: Demand) -> Choice? {
        Ladder(demand).steps.first?.choice
    }

    /// One demand's steps in quality order, and where it stands.
    private struct Ladder {
        /// One step: what it costs and what it forwards.
        struct Step {
            var bitrate: Int
            var choice: Choice
        }

        var steps: [Step] = []
        /// The index of the step forwarded now, if any.
        var current: Int?
        /// The highest step the height cap allows.
        var top = 0

        init(_ demand: Demand) {
            for (index, layer) in demand.layers.enumerated() {
                let count = max(layer.temporalBitrates.count, 1)
                for temporal in 0..<count {
                    if index == demand.current, temporal == min(demand.currentTemporalLayer ?? count - 1, count - 1) {
                        current = steps.count
                    }
                    let bitrate = layer.temporalBitrates.isEmpty ? layer.bitrate : layer.temporalBitrates[temporal]
                    steps.append(Step(bitrate: bitrate, choice: Choice(layer: index, temporalLayer: temporal,
                                                                       allTemporalLayers: temporal == count - 1)))
                }
                if index <= demand.tallestAllowed { top = steps.count - 1 }
            }
        }

        /// What `candidate` must fit, as a share of its bitrate: more above the step forwarded
        /// now; less for that step itself when it is its layer's base temporal layer (below
        /// it is another layer, which costs a keyframe and a freeze; below a higher temporal
        /// layer is the same layer at a lower frame rate, which costs nothing to undo).
        func costFactor(of candidate: Int) -> Double {
            guard let current else { return 1 }
            if candidate > current { return upgradeHeadroom }
            return candidate == current && steps[current].choice.temporalLayer == 0 ? keepCurrentFraction : 1
        }

        /// The best step from `start` up that fits `remaining` more bit/s; a step above the one
        /// forwarded now must fit with `upgradeHeadroom`, the one forwarded now only
        /// `keepCurrentFraction` of its rate.
        func bestStep(above start: Int, remaining: Int) -> Int {
            var best = start
            guard top > start else { return best }
            for candidate in (start + 1)...top {
                let cost = Double(steps[candidate].bitrate) * costFactor(of: candidate)
                guard Int(cost) - steps[start].bitrate <= remaining else { break }
                best = candidate
            }
            return best
        }
    }

}
