import Cluster
import ControlAPI
import DTLS
import Foundation
import Hummingbird
import Logging
import MediaSocket
import Rooms
import ServeSettings
import ServiceLifecycle
import Storage
import Webhooks

/// One `chorus serve` run's services, wired from its `ServeConfiguration`: the store, the media
/// port, the room registry with its call recorder, the cluster node, the control API, and (with
/// `--outbound on`) the webhook dispatcher. `wire` opens and binds what must exist before the
/// API can start; `run` starts everything in a ServiceGroup and returns after the drain.
struct ServerAssembly {
    let settings: ServeConfiguration
    let logger: Logger
    let database: any ChorusStore
    let socket: MediaSocket
    let mediaPort: Int
    let recorder: CallRecorder
    let registry: RoomRegistry
    let cluster: ClusterNode
    let api: ControlAPI
    let banner: DevelopmentApplication?

    static func wire(_ settings: ServeConfiguration, logger: Logger) async throws -> ServerAssembly {
        let database = try await settings.database.open(logger: logger)
        let router = DatagramRouter()
        let media = settings.media
        let (socket, mediaPort) = try await bindMedia(host: media.host, port: media.port, tcpPort: media.tcpPort,
                                                      router: router, logger: logger)
        let environment = MediaEnvironment(
            dtls: try DTLSContext(certificate: DTLSCertificate()), sink: socket, routing: router,
            candidateAddress: media.publicIPs[0], candidatePort: UInt16(mediaPort),
            candidateTCPPort: socket.boundTCPPort.map { UInt16($0) }, additionalCandidateAddresses: Array(media.publicIPs.dropFirst()),
            audio: media.audio, consentTimeoutNanoseconds: UInt64(media.consentTimeoutSeconds * 1e9), lanes: media.roomLanes,
            ticks: socket.ticks, faults: RoomFaults.fromEnvironment(ProcessInfo.processInfo.environment))
        let recorder = CallRecorder(database: database, logger: logger)
        let registry = RoomRegistry(logger: logger, media: environment, observer: recorder.observer)
        let banner = settings.devApp ? try await DevelopmentApplication.ensure(database) : nil
        let cluster = ClusterNode(identity: settings.nodeIdentity(mediaPort: mediaPort), store: database, registry: registry,
                                  logger: Logger(label: "chorus.cluster"))
        let api = try await ControlAPI(
            database: database, registry: registry, cluster: cluster,
            // The demo token route registers users of the development application, and of no other.
            configuration: ControlAPIConfiguration(settings, demoApplicationKey: settings.demo ? banner?.key : nil),
            prometheus: Observability.prometheus())
        return ServerAssembly(settings: settings, logger: logger, database: database, socket: socket, mediaPort: mediaPort,
                              recorder: recorder, registry: registry, cluster: cluster, api: api, banner: banner)
    }

    /// Runs every service until shutdown, then closes the store.
    func run() async throws {
        // Recordings this node was making when it stopped or died: their files play up to their
        // last second; they are "interrupted" (and told as recording.ready).
        let interrupted = try await database.interruptRecordings(nodeId: cluster.identity.nodeId, at: Date())
        if interrupted > 0 { logger.info("recordings interrupted by the last stop", metadata: ["count": "\(interrupted)"]) }
        let (api, registry, cluster, drain) = (api, registry, cluster, settings.drainSeconds)
        await cluster.setDrainHandler {
            // Asked to drain through the API: not ready, rooms run until empty or the deadline.
            api.beginDraining()
            await DrainService.waitUntilEmpty(registry, seconds: drain)
            await registry.closeAll()
            await cluster.releaseAll()
        }
        let group = ServiceGroup(configuration: .init(
            services: services(), gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        await database.close()
        logger.info("chorus stopped")
    }

    /// In start order; shutdown runs in reverse: drain (rooms end serverShutdown), HTTP, the
    /// heartbeat, media, then the recorder writes the last call records (their webhook events
    /// wait in the outbox).
    func services() -> [ServiceGroupConfiguration.ServiceConfiguration] {
        let webhooks = settings.outbound
            ? [WebhookDispatcher(database: database, bodies: ControlAPI.webhookBodies,
                                 allowPrivateAddresses: settings.allowPrivateOutbound, logger: Logger(label: "chorus.webhooks"))]
            : []
        let services: [any Service] = [recorder] + webhooks + [
            socket, ClusterService(node: cluster), httpApplication(),
            DrainService(api: api, registry: registry, cluster: cluster, drainSeconds: settings.drainSeconds, logger: logger),
        ]
        return services.map { .init(service: $0) }
    }

    /// The HTTP server with the API's router; it prints the development banner once listening.
    func httpApplication() -> some Service {
        let http = settings.http
        let (logger, banner, demo, mediaPort) = (logger, banner, settings.demo, mediaPort)
        let summary: Logger.Metadata = [
            "media": "udp/\(mediaPort)", "publicIp": "\(settings.media.publicIPs.joined(separator: ","))",
            "db": "\(database.location)", "node": "\(cluster.identity.nodeId)", "advertiseUrl": "\(cluster.identity.advertiseUrl)",
        ]
        return Application(
            router: api.makeRouter(),
            server: ControlAPI.httpServer(idleTimeout: http.idleTimeout.map { .milliseconds(Int($0 * 1000)) },
                                          connectionLimit: HTTPConnectionLimit(maximum: http.maxConnections)),
            configuration: .init(address: .hostname(http.host, port: http.port), serverName: "chorus"),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? http.port
                logger.info("chorus listening", metadata: summary.merging(["http": "\(http.host):\(bound)"]) { $1 })
                if let banner {
                    // Unbuffered: `make run` users and tests read it while the server runs.
                    let text = banner.text(host: http.host, port: bound, demo: demo) + "\n"
                    FileHandle.standardOutput.write(Data(text.utf8))
                }
            },
            logger: logger)
    }

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

extension ControlAPIConfiguration {
    /// The API's part of the server's settings.
    init(_ settings: ServeConfiguration, demoApplicationKey: String?) {
        self.init()
        self.demoApplicationKey = demoApplicationKey
        rateLimitPerSecond = settings.http.rateLimitPerSecond
        allowPrivateOutbound = settings.allowPrivateOutbound
        outboundEnabled = settings.outbound
        recordingsDirectory = settings.recordingsDirectory
    }
}
