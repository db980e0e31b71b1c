import Auth
import ChorusCore
import Cluster
import Foundation
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import Prometheus
import Rooms
import Storage
import Webhooks

/// Settings of the control plane that an operator may change.
public struct ControlAPIConfiguration: Sendable {
    /// Lifetime of access tokens issued at registration.
    public var tokenLifetime: TimeInterval = 24 * 3600
    /// Requests per second allowed per client address (burst is twice that); nil disables.
    public var rateLimitPerSecond: Double? = 100
    /// Key of the application whose users `POST /demo/token` registers (`chorus serve --demo`);
    /// nil, the default, leaves that route out entirely.
    public var demoApplicationKey: String?
    /// Lets webhook endpoints (and other outbound destinations) be loopback, private or
    /// link-local addresses (`--webhooks-allow-private`): for tests and trusted networks only.
    public var allowPrivateOutbound = false
    /// Off (`--outbound off`): this node starts no RTP forward (nor posts webhooks).
    public var outboundEnabled = true
    /// Where recordings are written (`--recordings-dir`).
    public var recordingsDirectory = "recordings"

    public init() {}
}

/// The REST control plane: rooms, user registration, calls and their statistics, operations.
/// Holds the dependencies every route needs and builds the router; the composition root
/// (`chorus serve`) or a test puts the router in a Hummingbird `Application`.
public final class ControlAPI: Sendable {
    /// Hard cap on any request body (the statistics route allows 256 KiB of it).
    public static let maxRequestBody = 1 << 20
    /// Cap on a request's header section (NIO's decoder refuses more: 431 `headersTooLarge`).
    public static let maxHeaderBytes = 80 * 1024

    public let database: any ChorusStore
    public let registry: RoomRegistry
    /// This node's place in the cluster (on SQLite, a cluster of one).
    public let cluster: ClusterNode
    let tokens: AccessTokenSigner
    let configuration: ControlAPIConfiguration
    let prometheus: PrometheusCollectorRegistry
    let metrics: APIMetrics
    let clock: @Sendable () -> Date
    /// Where the server may send on an application's behalf (webhooks).
    var outboundPolicy: OutboundAddressPolicy { OutboundAddressPolicy(allowPrivate: configuration.allowPrivateOutbound) }
    private let drainingFlag = NIOLockedValueBox(false)
    private let applications = ApplicationCache()

    /// Builds the API over an open database: loads (or creates) the token signing key and
    /// registers the node (`cluster`, by default a node named "local").
    public init(
        database: any ChorusStore, registry: RoomRegistry, cluster: ClusterNode? = nil,
        configuration: ControlAPIConfiguration = .init(),
        prometheus: PrometheusCollectorRegistry, clock: @escaping @Sendable () -> Date = { Date() }
    ) async throws {
        self.database = database
        self.registry = registry
        self.cluster = cluster ?? ClusterNode(
            identity: NodeIdentity(nodeId: "local", advertiseUrl: "http://127.0.0.1", mediaAddresses: ""),
            store: database, registry: registry, logger: Logger(label: "chorus.cluster"), clock: clock)
        try await self.cluster.register()
        self.configuration = configuration
        self.prometheus = prometheus
        self.metrics = APIMetrics()
        self.clock = clock
        let key = try await database.serverSecret(named: "accessTokenKey") { SecureRandom.bytes(32) }
        self.tokens = AccessTokenSigner(key: key)
    }

    func now() -> Date { clock() }

    /// The application with `key`, for authentication (see `ApplicationCache`).
    func application(key: String) async throws(StorageError) -> ApplicationRecord? {
        try await applications.application(key: key, in: database, now: now())
    }

    /// True once shutdown has begun: `/readyz` fails and no new rooms are created.
    public var isDraining: Bool { drainingFlag.withLockedValue { $0 } }

    /// Stops placing rooms here: rooms already here keep running (and take joins) until the
    /// drain ends them; new rooms go to other nodes, or get 503 `draining` on a lone node.
    public func beginDraining() {
        let first = drainingFlag.withLockedValue { draining in
            defer { draining = true }
            return !draining
        }
        if first { Task { await cluster.startDraining() } }
    }

    /// The router with every route and middleware.
    public func makeRouter() -> Router<ChorusRequestContext> {
        let router = Router(context: ChorusRequestContext.self, options: .autoGenerateHeadEndpoints)
        // Outside the error middleware: error answers get the CORS headers too.
        router.add(middleware: CORSMiddleware())
        router.add(middleware: ErrorMiddleware(metrics: metrics))
        router.add(middleware: MetricsMiddleware())
        // One structured access-log line per request, carrying hb.request.id (= x-request-id).
        router.add(middleware: LogRequestsMiddleware(.info))
        if let rate = configuration.rateLimitPerSecond, rate > 0 {
            // Two seconds' worth at once, and at least one request: below half a request a second a
            // burst under one token would refuse every request for ever.
            router.add(middleware: RateLimitMiddleware(limiter: RateLimiter(perSecond: rate, burst: max(1, rate * 2))))
        }
        var routes = RouteTable()
        addOperationRoutes(router, &routes)
        addRegistrationRoutes(router, &routes)
        addWebRoutes(router, &routes)
        if let demoKey = configuration.demoApplicationKey { addDemoRoutes(router, &routes, applicationKey: demoKey) }
        let authenticated = router.group().add(middleware: AuthenticationMiddleware(api: self))
        addRoomRoutes(authenticated, &routes)
        addCallRoutes(authenticated, &routes)
        addStatisticsRoutes(authenticated, &routes)
        addParticipantRoutes(authenticated, &routes)
        addEventRoutes(authenticated, &routes)
        addNodeRoutes(authenticated, &routes)
        addWebhookRoutes(authenticated, &routes)
        addRecordingRoutes(authenticated, &routes)
        addForwarderRoutes(authenticated, &routes)
        routes.addMethodNotAllowed(to: router)
        return router
    }
}

extension RoomRecord {
    var settings: RoomSettings {
        RoomSettings(maxParticipants: maxParticipants, mixedSpeakers: mixedSpeakers, videoSlots: videoSlots)
    }
}
