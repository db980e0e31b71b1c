import Auth
import ChorusCore
import DTLS
import Foundation
import NIOCore
import NIOPosix

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
    /// What the run must meet to pass (`LoadBars`).
    public var bars = LoadBars()

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

/// When silent participants use Opus DTX (a comfort-noise packet every 400 ms instead of 50
/// packets a second): as a browser does, when the server's answer asks for it (`usedtx=1`);
/// or always, or never, to compare servers on the same input.
public enum LoadDTX: String, Sendable, CaseIterable {
    case negotiated, on, off
}

/// Drives one load run: creates the rooms, registers and joins every simulated participant
/// through the REST API at the ramp-up rate, runs their media on one NIO event loop for the
/// duration, samples once a second, leaves, and returns the results.
///
/// All participant state lives on the single event loop; this type only hops onto it. Its own
/// mutable state is in `onLoop`, a `NIOLoopBoundBox` that checks every access is on the loop,
/// so the class is `Sendable` without `@unchecked`.
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
    /// The group's one loop: every participant, socket and timer of the run lives on it.
    let loop: any EventLoop
    let runID: String
    /// What only the event loop touches; the box traps on an access from any other thread.
    private let onLoop: NIOLoopBoundBox<LoopState>

    struct LoopState {
        var participants: [LoadParticipant] = []
        var auxiliaries: [LoadParticipant] = []
        var channels: [any Channel] = []
        var samples: [LoadResults.Sample] = []
        var joinFailures: [String] = []
        var hangUps: [@Sendable () async -> Void] = []
        var steadyFrom = MediaTime(nanoseconds: .max)
        var steadyUntil = MediaTime(nanoseconds: .max)
        /// How late each generator tick ran in the measured window, ms, and the last tick.
        var tickLags: [Double] = []
        var lastTickAt: MediaTime?
    }

    // The loop state by name (each access checked by `onLoop`).
    var participants: [LoadParticipant] {
        get { onLoop.value.participants }
        _modify { yield &onLoop.value.participants }
    }
    /// The extra connections of a server that carries video apart (Janus VideoRoom).
    var auxiliaries: [LoadParticipant] {
        get { onLoop.value.auxiliaries }
        _modify { yield &onLoop.value.auxiliaries }
    }
    var channels: [any Channel] {
        get { onLoop.value.channels }
        _modify { yield &onLoop.value.channels }
    }
    var samples: [LoadResults.Sample] {
        get { onLoop.value.samples }
        _modify { yield &onLoop.value.samples }
    }
    var joinFailures: [String] {
        get { onLoop.value.joinFailures }
        _modify { yield &onLoop.value.joinFailures }
    }
    /// How each joined participant hangs up, in join order.
    var hangUps: [@Sendable () async -> Void] {
        get { onLoop.value.hangUps }
        _modify { yield &onLoop.value.hangUps }
    }
    /// The measured period starts a second after the last join: before, jitter buffers are
    /// still settling and the first onsets say more about start-up than about the server.
    var steadyFrom: MediaTime {
        get { onLoop.value.steadyFrom }
        set { onLoop.value.steadyFrom = newValue }
    }

    /// The end of the measured period: when the media stopped.
    var steadyUntil: MediaTime {
        get { onLoop.value.steadyUntil }
        set { onLoop.value.steadyUntil = newValue }
    }

    /// Records how late a 5 ms tick ran (after the previous one, plus 5 ms), in the window.
    func noteTick(at now: MediaTime) {
        if let last = onLoop.value.lastTickAt, now >= steadyFrom, onLoop.value.tickLags.count < 2_000_000 {
            onLoop.value.tickLags.append(max(0, Double(now.nanoseconds(since: last)) / 1e6 - 5))
        }
        onLoop.value.lastTickAt = now
    }

    var tickLags: [Double] { onLoop.value.tickLags }

    public init(configuration: LoadConfiguration) throws {
        self.configuration = configuration
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        loop = group.next()
        onLoop = .makeBoxSendingValue(LoopState(), eventLoop: loop)
        let runID = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        self.runID = runID
        let http = try LoadHTTP(url: configuration.url)
        localHost = try LoadHTTP.localAddress(toward: http.host)
        switch configuration.target {
        case "chorus":
            signaling = ChorusSignaling(http: http, appKey: configuration.appKey, appSecret: configuration.appSecret,
                                        runID: runID)
        case "janus":
            signaling = JanusSignaling(http: http)
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
        let ticker = startTicking()
        let sampler = startSampling(since: started)
        try await joinAll(context: context, audio: audio, camera: configuration.video && separateVideo == nil ? camera : nil)
        if let separateVideo, let camera {
            try await joinSeparateVideo(separateVideo, context: context, camera: camera)
        }
        let steady = MediaTime.now().adding(milliseconds: 1_000)
        try await loop.submit {
            self.steadyFrom = steady
            for participant in self.participants { participant.window.from = steady }
        }.get()
        try await Task.sleep(nanoseconds: UInt64(configuration.durationSeconds * 1e9))
        try await loop.submit {
            let now = MediaTime.now()
            self.steadyUntil = now
            for participant in self.participants { participant.window.until = now }
        }.get()
        sampler.cancel()
        ticker.cancel()
        await leaveAll()
        await signaling.finish()
        let results = try await loop.submit { self.results(started: started) }.get()
        for channel in try await loop.submit({ self.channels }).get() { try? await channel.close() }
        return results
    }
}
