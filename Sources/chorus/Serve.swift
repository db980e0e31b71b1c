import ArgumentParser
import AudioMixer
import Auth
import ChorusCore
import Cluster
import ControlAPI
import Foundation
import Hummingbird
import Logging
import DTLS
import MediaSocket
import Rooms
import SDP
import ServiceLifecycle
import Storage
import Webhooks

/// `chorus serve`: the composition root. Opens storage, builds the room registry and the
/// control API, and runs them in a ServiceGroup that drains on SIGTERM/SIGINT.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the server.")

    @Option(help: "HTTP listen address (env CHORUS_HTTP_HOST, default 0.0.0.0).") var httpHost: String?
    @Option(help: "HTTP port (env CHORUS_HTTP_PORT, default 8080; 0 picks a free one).") var httpPort: Int?
    @Option(help: "UDP media port for every participant (env CHORUS_MEDIA_PORT, default 10000; 0 picks one).")
    var mediaPort: Int?
    @Option(help: "ICE-TCP port (RFC 6544) for clients whose network drops UDP (env CHORUS_MEDIA_TCP_PORT, default the UDP media port's number; 0 turns ICE-TCP off).")
    var mediaTcpPort: Int?
    @Option(help: "Media listen address, UDP and ICE-TCP (env CHORUS_MEDIA_HOST, default :: (IPv4 and IPv6), or 0.0.0.0 without IPv6).")
    var mediaHost: String?
    @Option(help: "Address announced in SDP candidates; repeat it for several (IPv4 and IPv6): each gets its own candidates, the first is preferred (env CHORUS_PUBLIC_IP, comma-separated, default 127.0.0.1).")
    var publicIp: [String] = []
    @Option(help: "trace, debug, info, notice, warning, error or critical (env CHORUS_LOG_LEVEL).") var logLevel: String?
    @Option(help: "Requests per second per client address; 0 disables (env CHORUS_RATE_LIMIT, default 100).")
    var rateLimit: Double?
    @Option(help: "Seconds to stay up not-ready before stopping on SIGTERM (env CHORUS_DRAIN_SECONDS, default 0).")
    var drainSeconds: Double?
    @Option(help: "Seconds an HTTP connection may sit without a complete request before it is closed; 0 = never (env CHORUS_HTTP_IDLE_TIMEOUT, default 60).")
    var httpIdleTimeout: Double?
    @Option(help: "HTTP connections open at once; past it a new one is answered 503 (env CHORUS_HTTP_MAX_CONNECTIONS, default a quarter of the descriptor limit, at most 10000).")
    var httpMaxConnections: Int?
    @Option(help: "Seconds a participant may go without a consent check or authenticated media from its path before its call ends with timeout (env CHORUS_CONSENT_TIMEOUT, default 30, RFC 7675).")
    var consentTimeout: Double?
    @Option(help: "Bitrate of the room mix encoders in bit/s (env CHORUS_OPUS_BITRATE, default 32000).")
    var opusBitrate: Int?
    @Option(help: "Opus complexity 0-10 of the mix encoders (env CHORUS_OPUS_COMPLEXITY, default 5).")
    var opusComplexity: Int?
    @Option(help: """
        Opus coder of the mix encoders (env CHORUS_OPUS_MODE): voip (hybrid SILK+CELT, the \
        default) or celt (CELT-only low delay: about half the encode CPU, lower speech quality).
        """)
    var opusMode: String?
    @Option(help: "Threads one big room's per-listener work (packetising, SRTP, sending) may use at once, 1-64; 1 keeps every room on its own queue (env CHORUS_ROOM_LANES, default one per core).")
    var roomLanes: Int?
    @Option(help: "This node's ID in a cluster: 1-64 letters, digits, '.', '_' or '-' (env CHORUS_NODE_ID, default the host name).")
    var nodeId: String?
    @Option(help: "This node's own HTTP base URL, where other nodes redirect requests for its rooms (env CHORUS_ADVERTISE_URL, default http://<first public IP>:<HTTP port>).")
    var advertiseUrl: String?
    @Flag(help: "Create a development application on an empty database and print a working curl line.")
    var devApp = false
    @Flag(help: "Let the web client at / get tokens from POST /demo/token; development only (implies --dev-app).")
    var demo = false
    @Flag(help: "Allow webhook endpoints on loopback, private and link-local addresses; tests and trusted networks only (env CHORUS_WEBHOOKS_ALLOW_PRIVATE=1).")
    var webhooksAllowPrivate = false
    @Option(help: "Folder for recordings, one Ogg Opus file per recording under <application>/<room>/ (env CHORUS_RECORDINGS_DIR, default ./recordings).")
    var recordingsDir: String?
    @Option(help: "on: this node sends what applications ask for (it posts the shared webhook outbox, and starts RTP forwards); off: it sends nothing outbound, writing webhook events only and refusing forwards, e.g. for API contract tests (env CHORUS_OUTBOUND, default on).")
    var outbound: String?
    @OptionGroup var database: DatabaseOption

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel ?? environment("LOG_LEVEL") ?? "info") ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "chorus")
        // Before any socket: the descriptor limit bounds what the server can hold (see DescriptorLimit).
        let descriptors = DescriptorLimit.raise()
        if descriptors.to != descriptors.from {
            logger.info("descriptor limit raised", metadata: ["from": "\(descriptors.from)", "to": "\(descriptors.to)"])
        }
        let host = httpHost ?? environment("HTTP_HOST") ?? "0.0.0.0"
        let port = httpPort ?? environment("HTTP_PORT").flatMap { Int($0) } ?? 8080
        let media = mediaPort ?? environment("MEDIA_PORT").flatMap { Int($0) } ?? 10000
        let addresses = !publicIp.isEmpty ? publicIp
            : environment("PUBLIC_IP").map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            ?? ["127.0.0.1"]
        guard let announced = addresses.first, addresses.count <= 8, addresses.allSatisfy(LocalParameters.isIPLiteral)
        else { throw ValidationError("public IPs must be one to eight IPv4 or IPv6 literals") }
        let tcpMedia = mediaTcpPort ?? environment("MEDIA_TCP_PORT").flatMap { Int($0) }
        guard tcpMedia.map({ (0...65535).contains($0) }) ?? true else {
            throw ValidationError("the media TCP port must be between 0 (off) and 65535")
        }
        let drain = drainSeconds ?? environment("DRAIN_SECONDS").flatMap { Double($0) } ?? 0
        guard (0...65535).contains(port), (0...65535).contains(media) else {
            throw ValidationError("ports must be between 1 and 65535 (0 picks a free one)")
        }
        guard (0...3600).contains(drain) else { throw ValidationError("drain seconds must be between 0 and 3600") }
        let idle = httpIdleTimeout ?? environment("HTTP_IDLE_TIMEOUT").flatMap { Double($0) } ?? 60
        guard (0...86400).contains(idle) else {
            throw ValidationError("the HTTP idle timeout must be between 0 and 86400 seconds")
        }
        // A quarter of the descriptors: ICE-TCP may take half, and the rest is for the media
        // socket, the database and Dispatch's own.
        let connections = httpMaxConnections ?? environment("HTTP_MAX_CONNECTIONS").flatMap { Int($0) }
            ?? min(10_000, max(64, descriptors.to / 4))
        guard (1...1_000_000).contains(connections) else {
            throw ValidationError("the HTTP connection limit must be between 1 and 1000000")
        }

        let lanes = roomLanes ?? environment("ROOM_LANES").flatMap { Int($0) } ?? ProcessInfo.processInfo.activeProcessorCount
        guard (1...64).contains(lanes) else { throw ValidationError("--room-lanes must be between 1 and 64") }
        let consent = consentTimeout ?? environment("CONSENT_TIMEOUT").flatMap { Double($0) } ?? 30
        guard (5...600).contains(consent) else {
            throw ValidationError("the consent timeout must be between 5 and 600 seconds")
        }

        let db = try await database.open(logger: logger)
        let router = DatagramRouter()
        let tcpPort: MediaSocket.TCPPort = switch tcpMedia {
        case nil: .sameAsUDP
        case 0?: .off
        case let port?: .port(port)
        }
        let (socket, boundMedia) = try await Self.bindMedia(
            host: mediaHost ?? environment("MEDIA_HOST"), port: media, tcpPort: tcpPort, router: router, logger: logger)
        let mediaEnvironment = MediaEnvironment(
            dtls: try DTLSContext(certificate: DTLSCertificate()), sink: socket, routing: router,
            candidateAddress: announced, candidatePort: UInt16(boundMedia),
            candidateTCPPort: socket.boundTCPPort.map { UInt16($0) }, additionalCandidateAddresses: Array(addresses.dropFirst()),
            audio: try audioEncoding(),
            consentTimeoutNanoseconds: UInt64(consent * 1e9), lanes: lanes, ticks: socket.ticks,
            faults: RoomFaults.fromEnvironment(ProcessInfo.processInfo.environment))
        let recorder = CallRecorder(database: db, logger: logger)
        let registry = RoomRegistry(logger: logger, media: mediaEnvironment, observer: recorder.observer)
        let demo = demo || environment("DEMO") == "1"
        let devApp = devApp || demo || environment("DEV_APP") == "1"
        let banner = devApp ? try await DevelopmentApplication.ensure(db) : nil
        var config = ControlAPIConfiguration()
        // The demo token route registers users of the development application, and of no other.
        config.demoApplicationKey = demo ? banner?.key : nil
        let rate = rateLimit ?? environment("RATE_LIMIT").flatMap { Double($0) } ?? 100
        config.rateLimitPerSecond = rate > 0 ? rate : nil
        config.allowPrivateOutbound = webhooksAllowPrivate || environment("WEBHOOKS_ALLOW_PRIVATE") == "1"
        config.recordingsDirectory = recordingsDir ?? environment("RECORDINGS_DIR") ?? "recordings"
        let outboundSetting = outbound ?? environment("OUTBOUND") ?? "on"
        guard outboundSetting == "on" || outboundSetting == "off" else {
            throw ValidationError("--outbound must be on or off, not \(outboundSetting)")
        }
        let deliverWebhooks = outboundSetting == "on"
        config.outboundEnabled = deliverWebhooks
        let webhooks = WebhookDispatcher(database: db, bodies: ControlAPI.webhookBodies, allowPrivateAddresses: config.allowPrivateOutbound,
                                         logger: Logger(label: "chorus.webhooks"))
        let identity = try nodeIdentity(httpPort: port, mediaPort: boundMedia, addresses: addresses)
        let cluster = ClusterNode(identity: identity, store: db, registry: registry,
                                  logger: Logger(label: "chorus.cluster"))
        let api = try await ControlAPI(database: db, registry: registry, cluster: cluster, configuration: config,
                                       prometheus: Observability.prometheus())
        // Recordings this node was making when it stopped or died: their files play up to their
        // last second; they are "interrupted" (and told as recording.ready).
        let interrupted = try await db.interruptRecordings(nodeId: identity.nodeId, at: Date())
        if interrupted > 0 { logger.info("recordings interrupted by the last stop", metadata: ["count": "\(interrupted)"]) }
        await cluster.setDrainHandler {
            // Asked to drain through the API: not ready, rooms run until empty or the deadline.
            api.beginDraining()
            await DrainService.waitUntilEmpty(registry, seconds: drain)
            await registry.closeAll()
            await cluster.releaseAll()
        }

        let app = Application(
            router: api.makeRouter(),
            server: ControlAPI.httpServer(idleTimeout: idle > 0 ? .milliseconds(Int(idle * 1000)) : nil,
                                          connectionLimit: HTTPConnectionLimit(maximum: connections)),
            configuration: .init(address: .hostname(host, port: port), serverName: "chorus"),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? port
                logger.info("chorus listening", metadata: [
                    "http": "\(host):\(bound)", "media": "udp/\(boundMedia)", "publicIp": "\(addresses.joined(separator: ","))",
                    "db": "\(db.location)", "node": "\(identity.nodeId)", "advertiseUrl": "\(identity.advertiseUrl)",
                ])
                if let banner {
                    // Unbuffered: `make run` users and tests read it while the server runs.
                    let text = banner.text(host: host, port: bound, demo: demo) + "\n"
                    FileHandle.standardOutput.write(Data(text.utf8))
                }
            },
            logger: logger)
        let group = ServiceGroup(configuration: .init(
            // Shutdown runs in reverse: drain (rooms end serverShutdown), HTTP, media, then the
            // recorder writes the last call records (their webhook events wait in the outbox).
            services: [
                .init(service: recorder),
            ] + (deliverWebhooks ? [.init(service: webhooks)] : []) + [
                .init(service: socket),
                .init(service: ClusterService(node: cluster)),
                .init(service: app),
                .init(service: DrainService(api: api, registry: registry, cluster: cluster, drainSeconds: drain,
                                            logger: logger)),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
        await db.close()
        logger.info("chorus stopped")
    }
}

extension Serve {
    /// The node's ID and the URLs others reach it at.
    func nodeIdentity(httpPort: Int, mediaPort: Int, addresses: [String]) throws -> NodeIdentity {
        let id = nodeId ?? environment("NODE_ID") ?? NodeIdentity.nodeId(from: ProcessInfo.processInfo.hostName)
        guard NodeIdentity.isValidNodeId(id) else {
            throw ValidationError("the node ID must be 1-64 letters, digits, '.', '_' or '-'")
        }
        let host = addresses.first.map { $0.contains(":") ? "[\($0)]" : $0 } ?? "127.0.0.1"
        let url = advertiseUrl ?? environment("ADVERTISE_URL") ?? "http://\(host):\(httpPort)"
        guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil,
              parsed.query == nil
        else { throw ValidationError("the advertise URL must be an http(s) URL such as http://node1.example.com:8080") }
        let media = addresses.map { ($0.contains(":") ? "[\($0)]" : $0) + ":\(mediaPort)" }.joined(separator: ",")
        return NodeIdentity(nodeId: id, advertiseUrl: url, mediaAddresses: media)
    }

    /// The mix encoders' settings, bounded to what libopus accepts.
    func audioEncoding() throws -> AudioEncoding {
        let bitrate = opusBitrate ?? environment("OPUS_BITRATE").flatMap { Int($0) } ?? 32_000
        let complexity = opusComplexity ?? environment("OPUS_COMPLEXITY").flatMap { Int($0) } ?? 5
        guard (6_000...510_000).contains(bitrate), (0...10).contains(complexity) else {
            throw ValidationError("Opus bitrate must be 6000-510000 and complexity 0-10")
        }
        let modeName = opusMode ?? environment("OPUS_MODE") ?? "voip"
        guard let mode = OpusEncoder.Mode(rawValue: modeName) else {
            throw ValidationError("--opus-mode must be voip or celt, not \(modeName)")
        }
        return AudioEncoding(bitrate: bitrate, complexity: complexity, mode: mode)
    }
}

/// On graceful shutdown: become not-ready and stop taking placements, wait the drain period
/// so load balancers notice (rooms here keep running), then close every room (participants
/// end `serverShutdown` and rejoin elsewhere) and release the node's leases. Listed after the
/// HTTP server so that it is shut down first.
struct DrainService: Service {
    let api: ControlAPI
    let registry: RoomRegistry
    let cluster: ClusterNode
    let drainSeconds: Double
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        api.beginDraining()
        logger.info("draining", metadata: ["seconds": "\(drainSeconds)"])
        if drainSeconds > 0 {
            try? await Task.sleep(for: .milliseconds(Int(drainSeconds * 1000)))
        }
        await registry.closeAll()
        logger.info("rooms closed")
        // The node's row says "stopped" if the store answers in time; if not, the node goes
        // anyway and the others count it lost when its heartbeat ages (its leases expire).
        if await boundedWait(.seconds(4), { await cluster.stop() }) == nil {
            logger.warning("the store did not take the node's stop in 4 s; leaving without it")
        }
    }

    /// Waits until no room here has a participant, or `seconds` passed.
    static func waitUntilEmpty(_ registry: RoomRegistry, seconds: Double) async {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            let counts = await registry.participantCounts()
            if counts.progressing + counts.established == 0 { return }
            try? await Task.sleep(for: .milliseconds(500))
        }
    }
}

extension Serve {
    /// The media port on `host`; without one, on `::` (one dual-stack socket for IPv4 and
    /// IPv6 peers), or on `0.0.0.0` when this machine has no IPv6.
    static func bindMedia(host: String?, port: Int, tcpPort: MediaSocket.TCPPort, router: DatagramRouter,
                          logger: Logger) async throws -> (MediaSocket, Int) {
        if let host {
            let socket = MediaSocket(host: host, port: port, tcpPort: tcpPort, router: router, logger: logger)
            return (socket, try await socket.bind())
        }
        do {
            let socket = MediaSocket(host: "::", port: port, tcpPort: tcpPort, router: router, logger: logger)
            return (socket, try await socket.bind())
        } catch {
            logger.info("no IPv6 media socket; IPv4 only", metadata: ["error": "\(error)"])
            let socket = MediaSocket(host: "0.0.0.0", port: port, tcpPort: tcpPort, router: router, logger: logger)
            return (socket, try await socket.bind())
        }
    }
}
