import ChorusCore

/// What one stream (a simulcast layer, or a publisher's only stream) costs to forward at each
/// target temporal layer: one `BitrateWindow` per TID (RFC 7741 §4.2; a packet without one is
/// base layer), read cumulatively, so `cumulativeBitsPerSecond` gives the rate with TID ≤ 0,
/// ≤ 1, ≤ 2 (… ≤ 3): what the slot sends when it forwards up to that layer. Measured, as the
/// layers' own rates are, since the publisher's split (libwebrtc: 40 / 20 / 40 %) moves with
/// its content and its encoder.
///
/// Sans-IO and allocation-free per packet: `add(bytes:temporalLayer:now:)` for each media
/// packet of the stream; `cumulativeBitsPerSecond(now:)` when layers are chosen (once a
/// second per subscriber; it returns an array).
public struct TemporalLayerBitrates: Sendable {
    private var windows: [BitrateWindow]

    /// `window` in nanoseconds, as `BitrateWindow`'s.
    public init(window: UInt64 = 1_000_000_000) {
        // One window each, built apart: copies of one would share their buffers until each
        // layer's first packet copied them, an allocation on the packet path.
        windows = (0...Int(TemporalLayerFilter.allLayers)).map { _ in BitrateWindow(window: window) }
    }

    /// Counts `bytes` of a packet whose TID is `temporalLayer` (nil: T clear, the base layer).
    public mutating func add(bytes: Int, temporalLayer: UInt8?, now: MediaTime) {
        let index = Int(min(temporalLayer ?? 0, TemporalLayerFilter.allLayers))
        windows[index].add(bytes: bytes, now: now)
    }

    /// True when packets of a TID above 0 arrived within the window (allocates nothing).
    public func hasTemporalLayers(now: MediaTime) -> Bool {
        var index = 1
        while index < windows.count {
            if windows[index].bitsPerSecond(now: now) > 0 { return true }
            index += 1
        }
        return false
    }

    /// The rate when forwarding TID ≤ 0, ≤ 1, … up to the highest TID that arrived within the
    /// window, in bit/s; empty when only the base layer arrived (a stream without temporal
    /// layers, which is forwarded whole).
    public func cumulativeBitsPerSecond(now: MediaTime) -> [Int] {
        let rates = windows.map { Int(clamping: $0.bitsPerSecond(now: now)) }
        guard let highest = rates.lastIndex(where: { $0 > 0 }), highest > 0 else { return [] }
        var total = 0
        return rates[0...highest].map { rate in
            total = total.addingReportingOverflow(rate).overflow ? .max : total + rate
            return total
        }
    }
}
