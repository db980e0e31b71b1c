import ArgumentParser
import Foundation
import LoadGenerator

/// `chorus load`: simulated participants over real connections against a running server (this
/// one, or Janus for the side-by-side comparison), with a summary table, results.json and an
/// HTML report. Exit status 0 when the run passed: everyone joined and heard audio, and the
/// bars (`LoadBars`: loss by both measures, mouth-to-ear p95, onsets detected) were met.
struct Load: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Drive a server with simulated participants.")

    @Option(help: "The server's HTTP API, http://host:port.") var url: String = "http://127.0.0.1:8080"
    @Option(help: "Application key (env CHORUS_APP_KEY).") var appKey: String?
    @Option(help: "Application secret (env CHORUS_APP_SECRET).") var appSecret: String?
    @Option(help: "Rooms.") var rooms: Int = 1
    @Option(help: "Participants per room.") var participants: Int = 5
    @Option(help: "Talkers per room (the first sends tone bursts for latency).") var talkers: Int = 1
    @Flag(help: "Every participant also sends VP8 video (640×360, 15 fps, ~300 kbps) and receives --slots streams.")
    var video = false
    @Option(help: "Video slots per participant, with --video (0…25).") var slots: Int = 2
    @Flag(help: "With --video: each camera sends three simulcast layers (RIDs q, h, f: 320×180, 640×360, 1280×720 at 150k/500k/1.5M bit/s targets), and transport-cc is on (as --transport-cc).")
    var simulcast = false
    @Flag(help: "Offer transport-wide congestion control and return transport-cc feedback, as browsers do.")
    var transportCc = false
    @Flag(help: "Media over ICE-TCP (the answer's passive TCP candidate, RFC 4571 framing) instead of UDP.")
    var tcp = false
    @Option(help: "Seconds of media once everyone joined (at most 3600).") var duration: Double = 10
    @Option(help: "Joins per second.") var rampUp: Double = 20
    @Option(help: "Directory for results.json and report.html.") var output: String = "load-output"
    @Option(help: "chorus, or janus (AudioBridge, and VideoRoom with --video, through its HTTP API, e.g. --url http://198.18.0.2:8088).")
    var target: String = "chorus"
    @Option(help: "The server's pid for CPU and memory (found by command line when local).") var serverPid: Int32?
    @Flag(help: "No progress line.") var quiet = false
    @Option(help: "The bar: audio loss, by sequence gaps and by packets received against 50/s, below this percent.")
    var maxLossPercent: Double = 0.5
    @Option(help: "The bar: mouth-to-ear p95 (missed onsets at 1 s) at most this many ms.")
    var maxLatencyP95Ms: Double = 400
    @Option(help: "The bar: at least this percent of the burst onsets detected by the probes.")
    var minOnsetsPercent: Double = 99.5
    @Option(help: "Opus DTX for silent participants: negotiated (when the server's answer has usedtx=1, as browsers do), on or off.")
    var dtx: String = "negotiated"
    @Option(help: "per-participant: a UDP socket per participant (default); shared: a socket per 64 participants, each participant on a loopback address of its own (127.a.b.c), read 64 datagrams a call. A server on loopback only.")
    var sockets: String = "per-participant"
    @Option(help: "Probe listeners in the whole run (they decode the mix to time the burst onsets): at most 2 a room, in rooms spread evenly over the run.")
    var probes: Int = 40
    @Option(help: "A listener that is not a probe authenticates and decrypts one RTP packet in this many and takes the others on their clear header (1: every packet through SRTP).")
    var srtpSample: Int = 16
    @Option(help: "Event loops (threads) the simulated participants are spread over; default one per core.")
    var eventLoops: Int?
    @Option(help: "With --target janus: AudioBridge prebuffering in 20 ms packets (Janus's default 6; 2 matches Chorus's 40 ms jitter-buffer start).")
    var janusPrebuffer: Int?

    func validate() throws {
        guard (1...1_000).contains(rooms), (1...10_000).contains(participants), rooms * participants <= 5_000 else {
            throw ValidationError("at most 1000 rooms, 10000 participants a room and 5000 in all")
        }
        guard (0...participants).contains(talkers) else { throw ValidationError("--talkers must be 0…participants") }
        guard duration > 0, duration <= 3_600, rampUp > 0 else { throw ValidationError("duration 0…3600 s, ramp-up > 0") }
        guard target == "chorus" || target == "janus" else { throw ValidationError("--target is chorus or janus") }
        guard (0...25).contains(slots) else { throw ValidationError("--slots must be 0…25") }
        guard (0...100).contains(maxLossPercent), maxLatencyP95Ms > 0, (0...100).contains(minOnsetsPercent) else {
            throw ValidationError("--max-loss-percent and --min-onsets-percent are 0…100, --max-latency-p95-ms > 0")
        }
        guard LoadDTX(rawValue: dtx) != nil else { throw ValidationError("--dtx is negotiated, on or off") }
        guard eventLoops.map({ (1...64).contains($0) }) ?? true else { throw ValidationError("--event-loops is 1…64") }
        guard janusPrebuffer.map({ target == "janus" && (0...50).contains($0) }) ?? true else {
            throw ValidationError("--janus-prebuffer is 0…50 packets, with --target janus")
        }
        guard sockets == "per-participant" || sockets == "shared" else {
            throw ValidationError("--sockets is per-participant or shared")
        }
        guard sockets == "per-participant" || !tcp else { throw ValidationError("--sockets shared is for UDP") }
        guard !simulcast || video else { throw ValidationError("--simulcast needs --video") }
        guard target == "chorus" || !(simulcast || transportCc || tcp) else {
            throw ValidationError("--simulcast, --transport-cc and --tcp drive Chorus only")
        }
    }

    func run() async throws {
        // Janus's HTTP API takes no application credentials.
        let credentials = target == "janus" ? ("", "") : (appKey ?? environment("APP_KEY"), appSecret ?? environment("APP_SECRET"))
        guard let key = credentials.0, let secret = credentials.1 else {
            throw ValidationError("--app-key and --app-secret (or CHORUS_APP_KEY / CHORUS_APP_SECRET) are required")
        }
        var configuration = LoadConfiguration(
            url: url, appKey: key, appSecret: secret, rooms: rooms, participants: participants, talkers: talkers,
            durationSeconds: duration, rampUpPerSecond: rampUp, output: URL(fileURLWithPath: output), target: target)
        configuration.serverPID = serverPid
        configuration.video = video
        configuration.slots = slots
        configuration.progress = !quiet
        configuration.dtx = LoadDTX(rawValue: dtx) ?? .negotiated
        configuration.simulcast = simulcast
        configuration.transportCC = transportCc || simulcast
        configuration.tcp = tcp
        configuration.sharedSockets = sockets == "shared"
        configuration.janusPrebufferPackets = janusPrebuffer
        configuration.maximumProbes = max(0, probes)
        configuration.srtpSample = max(1, srtpSample)
        if let eventLoops { configuration.eventLoops = eventLoops }
        configuration.bars.maxLossPercent = maxLossPercent
        configuration.bars.maxLatencyP95Ms = maxLatencyP95Ms
        configuration.bars.minOnsetsDetectedPercent = minOnsetsPercent
        let runner = try LoadRunner(configuration: configuration)
        let results = try await runner.run()
        if !quiet { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        print(LoadReport.summaryTable(results))
        for file in try LoadReport.write(results, to: configuration.output) { print("wrote \(file.path)") }
        if !results.passed { throw ExitCode(1) }
    }
}
