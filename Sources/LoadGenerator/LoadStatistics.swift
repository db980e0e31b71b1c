import ChorusCore
import RTP

/// What a simulated participant measures of what it receives, for the run's results: per
/// audio stream (the mix) packets, loss and jitter (`ReceivedStream`), and in the measured
/// window what arrived against what the stream's own timing says was sent (`WindowRate`); per
/// video slot stream the same figures and the frames completed; and, for a probe listener,
/// the mouth-to-ear latency of the burst talker's onsets (`LoadProbe`).
///
/// A value owned by its participant and fed every RTP packet the connection decrypted
/// (`record`), on the participant's event loop; the shard reads the last second's figures
/// (`takeInterval`) and sets the measured window.
struct LoadStatistics {
    /// The payload type of the VP8 received (ours, or the one the server's offer chose).
    var videoPayloadType = LoadSDP.vp8PayloadType
    /// With transport-cc the server probes the link with RTX padding on the slots' repair
    /// stream: neither audio nor video, so not counted.
    var ignoresRTX = false
    /// Audio streams received (the mix), by SSRC.
    private(set) var audioStreams: [UInt32: ReceivedStream] = [:]
    /// Video streams received in the slots, by SSRC, and the frames completed (marker bits).
    private(set) var videoStreams: [UInt32: ReceivedStream] = [:]
    private(set) var videoFramesReceived = 0
    /// The measured window: the audio received in it is held against what the streams' own
    /// timing says was sent (`WindowRate`), by SSRC.
    var window = (from: MediaTime(nanoseconds: .max), until: MediaTime(nanoseconds: .max))
    private(set) var windowRates: [UInt32: WindowRate] = [:]
    /// Set for a probe listener: it decodes the mix and times the burst onsets.
    private(set) var probe: LoadProbe?

    init(probe: LoadProbe?) {
        self.probe = probe
    }

    /// One decrypted RTP packet from the server, received at `now`.
    mutating func record(_ rtp: RTPPacket, now: MediaTime) {
        if record(rtp.header, now: now) { probe?.heard(rtp.payload, timestamp: rtp.header.timestamp, now: now) }
    }

    /// One RTP packet's header, received at `now`: everything but the probe's listening needs
    /// no more (a plain listener's packets arrive here undecrypted, `LoadConnection.receiveHeader`).
    /// True when it was the mix's audio.
    @discardableResult
    mutating func record(_ header: RTPHeader, now: MediaTime) -> Bool {
        if ignoresRTX, header.payloadType.rawValue == LoadSDP.rtxPayloadType { return false }
        if header.payloadType.rawValue == videoPayloadType {
            videoStreams[header.ssrc.rawValue, default: ReceivedStream(clockRate: 90_000)]
                .received(sequenceNumber: header.sequenceNumber, timestamp: header.timestamp, arrival: now)
            if header.marker { videoFramesReceived += 1 }
            return false
        }
        audioStreams[header.ssrc.rawValue, default: ReceivedStream(clockRate: 48_000)]
            .received(sequenceNumber: header.sequenceNumber, timestamp: header.timestamp, arrival: now)
        if now >= window.from, now < window.until {
            windowRates[header.ssrc.rawValue, default: WindowRate()]
                .received(timestamp: header.timestamp, marker: header.marker, at: now)
        }
        return true
    }

    /// Audio reception of the last interval (for the per-second samples), summed over streams.
    mutating func takeInterval() -> (received: Int, expected: Int) {
        var total = (received: 0, expected: 0)
        for key in audioStreams.keys {
            if let interval = audioStreams[key]?.interval() {
                total.received += interval.received
                total.expected += interval.expected
            }
        }
        return total
    }

    var isProbe: Bool { probe != nil }
    /// The probe's mouth-to-ear latencies, milliseconds, and when (none for a plain listener).
    var latencies: [(at: MediaTime, ms: Double)] { probe?.latencies ?? [] }
    var detectedBursts: Set<MediaTime> { probe?.detectedBursts ?? [] }
    var repeatedOnsets: [(at: MediaTime, hole: LoadResults.OnsetHole)] { probe?.repeatedOnsets ?? [] }
}
