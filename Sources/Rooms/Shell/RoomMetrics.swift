import Metrics
import PeerTransport

/// The rooms' counts on `/metrics`: the shell adds what each core step counted
/// (`RoomOutput.counters`) after carrying the step out. The core and its stages write no global
/// state, so a test of a core needs no metrics system and sees its counts in the output.
///
/// The metric objects are looked up per step with something to count, not cached: a cache made
/// before the process's metrics system is bootstrapped would keep no-op handlers for good.
enum RoomMetrics {
    static let layerSwitchLabel = "chorus_video_layer_switches_per_minute"
    static let estimateLabel = "chorus_downlink_estimate_bits_per_second"

    static func add(_ counters: RoomCounters) {
        guard !counters.isEmpty else { return }
        for reason in TransportDropReason.allCases {
            let count = counters.drops(reason)
            if count > 0 {
                Counter(label: "chorus_media_dropped_total", dimensions: [("reason", reason.rawValue)]).increment(by: count)
            }
        }
        increment("chorus_rtcp_goodbye_received_total", by: counters.goodbyesReceived)
        // A mix payload fanned out over lanes: a room big enough for them.
        increment("chorus_room_lane_fanouts_total", by: counters.laneFanOuts)
        // Audio ticks run late (caught up on the grid) and dropped (the firing came too late to
        // catch up): a room falling behind shows here before its listeners hear the gaps.
        increment("chorus_room_audio_ticks_late_total", by: counters.audioTicksLate)
        increment("chorus_room_audio_ticks_dropped_total", by: counters.audioTicksDropped)
        if counters.handshakesCompleted > 0 {
            Counter(label: "chorus_dtls_handshakes_total", dimensions: [("result", "ok")])
                .increment(by: counters.handshakesCompleted)
        }
        if counters.handshakesFailed > 0 {
            Counter(label: "chorus_dtls_handshakes_total", dimensions: [("result", "failed")])
                .increment(by: counters.handshakesFailed)
        }
        if !counters.downlinkEstimates.isEmpty {
            let recorder = Recorder(label: estimateLabel, aggregate: true)
            for bitrate in counters.downlinkEstimates { recorder.record(bitrate) }
        }
        if !counters.layerSwitchRates.isEmpty {
            let recorder = Recorder(label: layerSwitchLabel, aggregate: true)
            for rate in counters.layerSwitchRates { recorder.record(rate) }
        }
    }

    private static func increment(_ label: String, by count: Int) {
        if count > 0 { Counter(label: label).increment(by: count) }
    }
}
