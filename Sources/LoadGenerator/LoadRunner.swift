import Auth
import ChorusCore
import DTLS
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// How a run is set up (`chorus load` options).
public struct LoadConfiguration: Sendable {
    public var url: String
    public var appKey: String
    public var appSecret: String
    public var rooms: Int
    public var participants: Int
    public var talkers: Int
    public var durationSeconds: Double
    public var rampUpPerSecond: Double
    public var output: URL
    public var target: String
    /// Every participant also sends a VP8 camera and receives `slots` forwarded video streams.
    public var video = false
    public var slots = 2
    /// Probe listeners per room that decode the mix to time onsets (decoding costs ~26 µs a frame).
    public var probesPerRoom = 2
    /// Probe listeners in the whole run, in rooms spread evenly over it (`probeRoomStride`):
    /// at 200 rooms of 10, two in every room were 400 Opus decoders, most of the generator's CPU.
    public var maximumProbes = 40
    /// A listener that is not a probe sends one RTP packet in this many through SRTP and takes
    /// the rest on their clear header (`LoadConnection.receiveHeader`); 1: every packet.
    public var srtpSample = 16
    /// The server's pid for CPU and memory; found by command line when nil and local.
    public var serverPID: Int32?
    public var progress: Bool = true
    /// Whether silent participants pause in Opus DTX.
    public var dtx = LoadDTX.negotiated
    /// With `video`: every camera sends three simulcast layers (q, h, f; `LoadCamera`).
    public var simulcast = false
    /// Offer transport-wide congestion control and return transport-cc feedback for what the
    /// server sends (as browsers do), so the server estimates each subscriber's downlink itself.
    public var transportCC = false
    /// Media over ICE-TCP (RFC 6544, the answer's passive TCP candidate, RFC 4571 framing)
    /// instead of UDP.
    public var tcp = false
    /// Shared sockets, each for `LoadSharedSocket.participantsPerSocket` participants on
    /// loopback addresses of their own, spread over the event loops (`LoadSharedSocket`),
    /// instead of a socket per participant. A local server only.
    public var sharedSockets = false
    /// Event loops the simulated participants are spread over (a connection stays on one).
    public var eventLoops = System.coreCount
    /// What the run must meet to pass (`LoadBars`).
    public var bars = LoadBars()
    /// Against Janus: AudioBridge prebuffering in packets (nil: Janus's default of 6).
    public var janusPrebufferPackets: Int?

    public init(url: String, appKey: String, appSecret: String, rooms: Int, participants: Int, talkers: Int,
                durationSeconds: Double, rampUpPerSecond: Double, output: URL, target: String) {
        self.url = url
        self.appKey = appKey
        self.appSecret = appSecret
        self.rooms = rooms
        self.participants = participants
        self.talkers = talkers
        self.durationSeconds = durationSeconds
        self.rampUpPerSecond = rampUpPerSecond
        self.output = output
        self.target = target
    }
}

extension LoadConfiguration {
    /// Rooms with probes are every this many: rooms × probes a room / this ≤ `maximumProbes`.
    var probeRoomStride: Int {
        let wanted = rooms * probesPerRoom
        guard maximumProbes > 0, probesPerRoom > 0 else { return .max }
        return max(1, (wanted + maximumProbes - 1) / maximumProbes)
    }

    /// Whether the participant at `position` of `room` is a probe listener.
    func isProbe(room: Int, position: Int) -> Bool {
        maximumProbes > 0 && room % probeRoomStride == 0 && position >= talkers && position < talkers + probesPerRoom
    }
}

/// When silent participants use Opus DTX (a comfort-noise packet every 400 ms instead of 50
/// packets a second): as a browser does, when the server's answer asks for it (`usedtx=1`);
/// or always, or never, to compare servers on the same input.
public enum LoadDTX: String, Sendable, CaseIterable {
    case negotiated, on, off
}

/// Drives one load run: creates the rooms, registers and joins every simulated participant
/// through the REST API at the ramp-up rate, runs their media for the duration on one NIO event
/// loop per core (`LoadShard`: a connection lives on the loop its socket was bound on), samples
/// once a second, leaves, and returns the results.
///
/// The runner's own mutable state (samples, join failures) lives on the first loop, the home
/// loop, in `onLoop`, a `NIOLoopBoundBox` that checks every access is on it; each shard keeps
/// its connections the same way, and the measured window is atomic (`LoadWindow`). So the class
/// is `Sendable` without `@unchecked`.
public final class LoadRunner: Sendable {
    let configuration: LoadConfiguration
    let signaling: any LoadSignaling
    /// Set when the run has video and the server carries it on connections of their own.
    var separateVideo: (any LoadSeparateVideoSignaling)? {
        configuration.video ? signaling as? any LoadSeparateVideoSignaling : nil
    }
    /// Our address towards the server: what participants bind to and offer as their candidate
    /// (127.0.0.1 for a local Chorus, the veth address for Janus in its network namespace).
    let localHost: String
    let group: MultiThreadedEventLoopGroup
    /// One shard per loop of `group`; sockets are bound round-robin over the loops.
    let shards: [LoadShard]
    /// The home loop: the runner's samples and join failures, and where the results are made.
    var loop: any EventLoop { shards[0].loop }
    let runID: String
    /// The measured period: a second after the last join until the media stopped.
    let window = LoadWindow()
    /// The next participant's number on the shared sockets (its loopback address and socket).
    let sharedIndex = Atomic<Int>(0)
    /// With `sharedSockets`: the shared sockets, opened before the joins.
    let sharedSockets = Mutex<[LoadSharedSocket]>([])
    /// What only the home loop touches; the box traps on an access from any other thread.
    private let onLoop: NIOLoopBoundBox<LoopState>

    struct LoopState {
        var samples: [LoadResults.Sample] = []
        var joinFailures: [String] = []
    }

    var samples: [LoadResults.Sample] {
        get { onLoop.value.samples }
        _modify { yield &onLoop.value.samples }
    }
    var joinFailures: [String] {
        get { onLoop.value.joinFailures }
        _modify { yield &onLoop.value.joinFailures }
    }

    /// The shard whose loop serves `channel`.
    func shard(of channel: any Channel) -> LoadShard {
        shards.first { $0.loop === channel.eventLoop } ?? shards[0]
    }

    /// `body` on every shard's loop, in shard order.
    func onEveryShard<Result: Sendable>(_ body: @escaping @Sendable (LoadShard) -> Result) async throws -> [Result] {
        var results: [Result] = []
        for shard in shards { results.append(try await shard.loop.submit { body(shard) }.get()) }
        return results
    }

    public init(configuration: LoadConfiguration) throws {
        self.configuration = configuration
        group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, configuration.eventLoops))
        let shards = group.makeIterator().map(LoadShard.init(loop:))
        self.shards = shards
        onLoop = .makeBoxSendingValue(LoopState(), eventLoop: shards[0].loop)
        let runID = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        self.runID = runID
        let http = try LoadHTTP(url: configuration.url)
        localHost = try LoadHTTP.localAddress(toward: http.host)
        switch configuration.target {
        case "chorus":
            signaling = ChorusSignaling(http: http, appKey: configuration.appKey, appSecret: configuration.appSecret,
                                        runID: runID)
        case "janus":
            signaling = JanusSignaling(http: http, prebufferPackets: configuration.janusPrebufferPackets)
        default:
            throw LoadHTTP.Failure(description: "unknown target \(configuration.target): chorus or janus")
        }
    }

    deinit {
        try? group.syncShutdownGracefully()
    }

    /// Runs the whole scenario and returns what it measured.
    public func run() async throws -> LoadResults {
        // Whole seconds: results.json keeps ISO 8601 without fractions.
        let started = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let context = try DTLSContext(certificate: DTLSCertificate(commonName: "chorus-load"))
        let audio = (burst: try LoadAudio.make(.burst), speech: try LoadAudio.make(.speech),
                     silence: try LoadAudio.make(.silence))
        let camera = configuration.video
            ? (configuration.simulcast ? try LoadCamera.simulcast() : LoadCamera.single(try LoadVideo.make())) : nil
        try await signaling.createRooms(count: configuration.rooms, participants: configuration.participants,
                                        videoSlots: configuration.video ? configuration.slots : 0)
        if configuration.sharedSockets { try await openSharedSockets() }
        let tickers = startTicking()
        let sampler = startSampling(since: started)
        try await joinAll(context: context, audio: audio, camera: configuration.video && separateVideo == nil ? camera : nil)
        if let separateVideo, let camera {
            try await joinSeparateVideo(separateVideo, context: context, camera: camera)
        }
        let steady = MediaTime.now().adding(milliseconds: 1_000)
        window.from = steady
        _ = try await onEveryShard { $0.setWindow(from: steady) }
        try await Task.sleep(nanoseconds: UInt64(configuration.durationSeconds * 1e9))
        let end = MediaTime.now()
        window.until = end
        _ = try await onEveryShard { $0.setWindow(until: end) }
        sampler.cancel()
        for (ticker, shard) in zip(tickers, shards) {
            let stopped = shard.loop.makePromise(of: Void.self)
            ticker.cancel(promise: stopped)
            try await stopped.futureResult.get()
        }
        await leaveAll()
        await signaling.finish()
        // Once every socket is closed and every ticker stopped, no loop touches a participant:
        // the home loop can read them all.
        for channel in try await onEveryShard({ $0.channels }).joined() { try? await channel.close() }
        let contents = try await onEveryShard { $0.contents }
        return try await loop.submit { self.results(started: started, contents: contents) }.get()
    }
}
