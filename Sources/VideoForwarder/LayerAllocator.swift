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
public enum LayerAllocator {
    /// A layer above the slot's current one must fit with this much to spare.
    public static let upgradeHeadroom = 1.2
    /// A slot that already forwards a layer keeps its lowest one while the budget covers this
    /// share of it: an estimate saw-tooths ~15 % below a link's rate after every back-off
    /// (GCC's 0.85 decrease), and a pause costs a freeze and a keyframe to undo, so the lowest
    /// layer is given up only on a clear shortfall (the hysteresis of the pause).
    public static let keepLowestFraction = 0.75
    /// Likewise for a higher layer a slot forwards: it is kept while the budget covers this
    /// share of it. One delay-based back-off sets the estimate to 85 % of what was acknowledged,
    /// below the layer that was being carried, so without this every overuse signal (one late
    /// burst on a busy host is enough) dropped the top layer; a link that is really thinner backs
    /// off again (to 72 %) and the layer goes.
    public static let keepCurrentFraction = 0.8

    /// One layer a publisher sends, as measured arriving: bit/s and picture height (0 when not
    /// known yet, which no height cap excludes).
    public struct Layer: Sendable, Equatable {
        public var bitrate: Int
        public var height: Int

        public init(bitrate: Int, height: Int = 0) {
            self.bitrate = max(bitrate, 0)
            self.height = max(height, 0)
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

        public init(layers: [Layer], maximumHeight: Int? = nil, priority: Int, current: Int? = nil) {
            self.layers = layers
            self.maximumHeight = maximumHeight
            self.priority = priority
            self.current = current
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
        var remaining = max(budget, 0)
        var chosen = [Int?](repeating: nil, count: demands.count)
        let order = demands.indices.sorted { (demands[$0].priority, $0) < (demands[$1].priority, $1) }
        for index in order {
            guard let lowest = demands[index].layers.first else { continue }
            let kept = demands[index].current != nil
            let need = kept ? Int(Double(lowest.bitrate) * keepLowestFraction) : lowest.bitrate
            guard need <= remaining else { continue }
            chosen[index] = 0
            remaining -= min(lowest.bitrate, remaining)
        }
        for index in order {
            guard let current = chosen[index] else { continue }
            let layers = demands[index].layers
            let top = min(demands[index].tallestAllowed, layers.count - 1)
            var best = current
            if top > current {
                for candidate in (current + 1)...top {
                    let cost = Double(layers[candidate].bitrate) * costFactor(of: candidate, forwarding: demands[index].current)
                    guard Int(cost) - layers[current].bitrate <= remaining else { break }
                    best = candidate
                }
            }
            remaining -= min(layers[best].bitrate - layers[current].bitrate, remaining)
            chosen[index] = best
        }
        return chosen
    }

    /// What a layer must fit, as a share of its bitrate, for a slot that forwards `forwarding`.
    static func costFactor(of candidate: Int, forwarding: Int?) -> Double {
        guard let forwarding else { return 1 }
        if candidate > forwarding { return upgradeHeadroom }
        return candidate == forwarding ? keepCurrentFraction : 1
    }
}
