import Foundation

/// Everything one load run measured: what `chorus load` writes as `results.json`, prints as
/// the summary table and draws in `report.html`. Plain Codable values, so a later run (or a
/// Janus run) can be compared field by field.
public struct LoadResults: Codable, Sendable, Equatable {
    /// The run's parameters, as given on the command line.
    public struct Scenario: Codable, Sendable, Equatable {
        public var target: String
        public var url: String
        public var rooms: Int
        public var participantsPerRoom: Int
        public var talkersPerRoom: Int
        public var video: Bool
        public var slots: Int
        public var durationSeconds: Double
        public var rampUpPerSecond: Double
        /// Three simulcast layers per camera, transport-cc, and the media transport ("udp" or
        /// "tcp"); absent in results written before they existed.
        public var simulcast: Bool?
        public var transportCC: Bool?
        public var transport: String?
        /// Against Janus: the AudioBridge prebuffering the rooms were created with, in packets
        /// (absent: Janus's default, 6).
        public var janusPrebufferPackets: Int?
        /// The generator's event loops (absent in results written when it had one).
        public var eventLoops: Int?
        /// "per-participant" or "shared" (`LoadSharedSocket`; absent in results written before
        /// the choice existed, which were per participant).
        public var sockets: String?

        public init(target: String, url: String, rooms: Int, participantsPerRoom: Int, talkersPerRoom: Int,
                    video: Bool, slots: Int, durationSeconds: Double, rampUpPerSecond: Double,
                    simulcast: Bool? = nil, transportCC: Bool? = nil, transport: String? = nil) {
            self.target = target
            self.url = url
            self.rooms = rooms
            self.participantsPerRoom = participantsPerRoom
            self.talkersPerRoom = talkersPerRoom
            self.video = video
            self.slots = slots
            self.durationSeconds = durationSeconds
            self.rampUpPerSecond = rampUpPerSecond
            self.simulcast = simulcast
            self.transportCC = transportCC
            self.transport = transport
        }
    }

    /// A distribution summary (milliseconds unless said otherwise).
    public struct Distribution: Codable, Sendable, Equatable {
        public var count: Int
        public var mean: Double
        public var p50: Double
        public var p95: Double
        public var p99: Double
        public var max: Double

        public init(_ values: [Double]) {
            let sorted = values.filter(\.isFinite).sorted()
            count = sorted.count
            func quantile(_ q: Double) -> Double {
                guard !sorted.isEmpty else { return 0 }
                return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * q).rounded()))]
            }
            mean = sorted.isEmpty ? 0 : sorted.reduce(0, +) / Double(sorted.count)
            p50 = quantile(0.5)
            p95 = quantile(0.95)
            p99 = quantile(0.99)
            max = sorted.last ?? 0
        }
    }

    /// One second of the run (after ramp-up started), for the charts.
    public struct Sample: Codable, Sendable, Equatable {
        /// Seconds since the first join.
        public var second: Double
        /// Participants established at that time.
        public var established: Int
        /// Audio packets received by all listeners in that second, and the share lost.
        public var audioPacketsReceived: Int
        public var audioLossPercent: Double
        /// Median mouth-to-ear latency of the onsets heard in that second (0 when none).
        public var latencyMedianMs: Double
        /// Server CPU (cores, 1.0 = one core busy) and resident memory; nil when unknown.
        public var serverCPUCores: Double?
        public var serverMemoryMB: Double?
        /// The part of `serverCPUCores` spent in the kernel (system time).
        public var serverSystemCPUCores: Double?
        /// The load generator's own CPU (cores).
        public var generatorCPUCores: Double
        /// Percent of the machine's CPU time its hypervisor gave to other guests (`HostSteal`).
        public var hostStealPercent: Double?

        public init(second: Double, established: Int, audioPacketsReceived: Int, audioLossPercent: Double,
                    latencyMedianMs: Double, serverCPUCores: Double?, serverMemoryMB: Double?,
                    generatorCPUCores: Double, hostStealPercent: Double? = nil,
                    serverSystemCPUCores: Double? = nil) {
            self.second = second
            self.established = established
            self.audioPacketsReceived = audioPacketsReceived
            self.audioLossPercent = audioLossPercent
            self.latencyMedianMs = latencyMedianMs
            self.serverCPUCores = serverCPUCores
            self.serverMemoryMB = serverMemoryMB
            self.generatorCPUCores = generatorCPUCores
            self.hostStealPercent = hostStealPercent
            self.serverSystemCPUCores = serverSystemCPUCores
        }
    }

    public var scenario: Scenario
    public var startedAt: Date
    /// Participants planned (rooms × participants per room), those that joined (201), and
    /// those that reached `established` (DTLS done).
    public var participants: Int
    public var joined: Int
    public var established: Int
    /// First signalling request (Chorus: the registration; Janus: the handle's attach) → DTLS
    /// connected, milliseconds.
    public var joinTime: Distribution
    /// Listeners (every participant receives the mix) that received audio during the run.
    public var listenersWithAudio: Int
    /// Silent participants that paused in Opus DTX (see `LoadDTX`), so the input is known.
    public var participantsInDTX: Int = 0
    public var audioPacketsReceived: Int
    public var audioPacketsExpected: Int
    /// Lost / expected, over every audio stream received (RFC 3550 A.3), percent.
    public var audioLossPercent: Double
    /// RFC 3550 inter-arrival jitter of the audio streams received, milliseconds.
    public var audioJitter: Distribution
    /// Packets the listeners received in the measured window against those the streams' own
    /// timing says were sent (RTP timestamps within talk spurts, held to the wall clock),
    /// percent short: unlike the sequence measure, it sees a server that falls behind and sends
    /// fewer packets a second.
    public var audioRateLossPercent: Double?
    /// Tone-burst onset sent by a talker → onset decoded by a probe listener; an onset a probe
    /// did not detect counts at the 1 s deadline.
    public var mouthToEar: Distribution
    /// Burst onsets the probes should have heard in the measured window, and those they did.
    public var onsetsExpected: Int?
    public var onsetsDetected: Int?
    /// Onsets the probes heard a second time (the same burst's tone back after 200 ms without
    /// it): an artifact of the audio path, never counted as a latency.
    public var onsetsRepeated: Int?
    /// Each repeated onset's hole: how long the tone was gone before it came back.
    public var repeatedOnsetHoles: [OnsetHole]?
    /// The hole before a repeated onset, in the mix stream's own time (its RTP timestamps) and
    /// in arrival time, milliseconds.
    public struct OnsetHole: Codable, Sendable, Equatable {
        public var streamMs: Double
        public var arrivalMs: Double
    }
    /// How late the generator's own 5 ms tick ran in the measured window (ms): a latency figure
    /// near this says more about the generator than about the server.
    public var generatorTickLag: Distribution?
    /// The bars the run was held to, and those it missed.
    public var bars: LoadBars?
    public var failedBars: [String]?
    /// Video (with `--video`): frames completed (marker bits) and packets received in all slots,
    /// the subscribers that should have received video and those that did, and the loss over
    /// every slot stream (RFC 3550 A.3), percent.
    public var videoFramesReceived: Int
    public var videoPacketsReceived: Int
    public var videoSubscribers: Int
    public var subscribersWithVideo: Int
    public var videoLossPercent: Double
    /// Transport-cc feedback messages the participants sent the server (with transport-cc).
    public var transportFeedbackSent: Int?
    /// Mean CPU over the steady part of the run (cores) and peak resident memory.
    public var serverCPUCores: Double?
    public var serverMemoryMB: Double?
    /// The part of `serverCPUCores` spent in the kernel. On loopback it includes delivering the
    /// server's datagrams into the generator's sockets and waking their readers, as it does for
    /// every server measured, so a server's system time alone bounds its per-CPU ratio.
    public var serverSystemCPUCores: Double?
    public var generatorCPUCores: Double
    /// Mean percent of the machine's CPU time stolen by its hypervisor over the steady part of
    /// the run (`HostSteal`): beside a run that fell behind, it tells a slow host from a slow
    /// server. Never part of the verdict; nil where `/proc/stat` has no steal figure.
    public var hostStealPercent: Double?
    /// Server CPU seconds per participant-second: the capacity figure compared across servers.
    public var serverCPUSecondsPerParticipantSecond: Double?
    public var samples: [Sample]
    /// Problems seen (join failures, handshakes that never completed), first few of each kind.
    public var errors: [String]
    /// The run completed and every listener received audio.
    public var passed: Bool
}
