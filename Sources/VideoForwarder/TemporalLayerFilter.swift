/// Which frames of a VP8 stream a slot forwards when its subscriber's link carries only the
/// lower temporal layers (issue 16, item 3). Each frame carries its temporal layer index (TID)
/// and the layer sync bit (Y) in its payload descriptor (RFC 7741 §4.2); a frame of layer n
/// references only frames of layers ≤ n, so the frames of layers ≤ n decode without the others
/// (libwebrtc's VP8 simulcast sends three: 0, 2, 1, 2, … at a quarter, a quarter and half the
/// frame rate).
///
/// The slot forwards the frames whose TID is at most `current`, which follows `target`:
/// - down at once: at the next frame boundary (a frame already started is finished, since
///   half a frame would only be thrown away by the receiver);
/// - up one layer at a time, at a frame of the next layer with Y set (it references only the
///   base layer, so it decodes although that layer's earlier frames were dropped), or at a key
///   frame, from which every layer can start; going from 0 straight to 2 at a layer 2 sync frame
///   would let through the later layer 1 frames, which reference layer 1 frames never sent;
/// - a packet without a TID (T clear) belongs to the base layer.
///
/// Decisions are per frame (RTP timestamp: every packet of a frame shares it), kept for the
/// last `remembered` frames so a reordered packet follows its frame. A reordered packet of a
/// frame never seen before (all its earlier packets late) is forwarded: the outputs of its
/// sequence number and picture ID were kept free when newer packets went out, and dropping it
/// would leave a gap in the picture IDs the receiver would wait on.
///
/// Sans-IO, fixed memory: `admit` once per packet of the forwarded stream, `reset` at a switch.
public struct TemporalLayerFilter: Sendable {
    /// TID is two bits: a target of 3 forwards every temporal layer.
    public static let allLayers: UInt8 = 3
    static let remembered = 16

    /// One recent frame, by RTP timestamp, and whether it is forwarded.
    private struct Frame: Sendable {
        var timestamp: UInt32
        var forwarded: Bool
    }

    /// The highest TID to forward, as the allocator chose (clamped to 0…3).
    public var target: UInt8 = allLayers {
        didSet { target = min(target, Self.allLayers) }
    }
    /// The highest TID forwarded now.
    public private(set) var current: UInt8 = allLayers
    /// Frames not forwarded, for the participant's counters.
    public private(set) var framesDropped: UInt64 = 0
    private var frames: [Frame]
    /// Index of the newest frame in `frames`, nil before the first.
    private var newest: Int?

    public init() {
        frames = Array(repeating: Frame(timestamp: 0, forwarded: false), count: Self.remembered)
    }

    /// A switch: the stream starts at the key frame at `timestamp`, with every layer up to the
    /// target (a key frame refreshes every reference).
    public mutating func reset(keyFrameTimestamp timestamp: UInt32) {
        current = target
        // A reordered packet of a frame not seen is forwarded: the ring is as good as empty.
        for index in frames.indices { frames[index].forwarded = true }
        newest = nil
        record(timestamp, forwarded: true)
    }

    /// Whether to forward a packet of the frame at `timestamp`, whose descriptor says TID
    /// `temporalLayer` (nil: T clear) and Y `layerSync`; `keyFrame` when it starts a key frame.
    public mutating func admit(timestamp: UInt32, temporalLayer: UInt8?, layerSync: Bool, keyFrame: Bool) -> Bool {
        if let newest {
            let last = frames[newest]
            if timestamp == last.timestamp { return last.forwarded }
            if Int32(bitPattern: timestamp &- last.timestamp) < 0 { return decision(forOlder: timestamp) }
        }
        let forwarded = decide(temporalLayer: temporalLayer ?? 0, layerSync: layerSync, keyFrame: keyFrame)
        if !forwarded { framesDropped &+= 1 }
        record(timestamp, forwarded: forwarded)
        return forwarded
    }

    /// The decision for the first packet seen of a new frame.
    private mutating func decide(temporalLayer: UInt8, layerSync: Bool, keyFrame: Bool) -> Bool {
        if keyFrame {
            current = target
            return true
        }
        if target < current { current = target }
        if temporalLayer <= current { return true }
        guard layerSync, temporalLayer == current + 1, temporalLayer <= target else { return false }
        current = temporalLayer
        return true
    }

    /// A packet of a frame older than the newest: as that frame went, forwarded if never seen.
    private func decision(forOlder timestamp: UInt32) -> Bool {
        for index in frames.indices where frames[index].timestamp == timestamp {
            return frames[index].forwarded
        }
        return true
    }

    private mutating func record(_ timestamp: UInt32, forwarded: Bool) {
        let index = newest.map { ($0 + 1) % Self.remembered } ?? 0
        frames[index] = Frame(timestamp: timestamp, forwarded: forwarded)
        newest = index
    }
}
