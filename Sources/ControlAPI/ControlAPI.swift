import Auth
import ChorusCore
import Foundation
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import Prometheus
import Rooms
import Storage

/// Settings of the control plane that an operator may change.
public struct ControlAPIConfiguration: Sendable {
    /// Lifetime of access tokens issued at registration.
    public var tokenLifetime: TimeInterval = 24 * 3600
    /// Requests per second allowed per client address (burst is twice that); nil disables.
    public var rateLimitPerSecond: Double? = 100
    /// Key of the application whose users `POST /demo/token` registers (`chorus serve --demo`);
    /// nil, the default, leaves that route out entirely.
    public var demoApplicationKey: String?

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
    let tokens: AccessTokenSigner
    let configuration: ControlAPIConfiguration
    let prometheus: PrometheusCollectorRegistry
    let metrics: APIMetrics
    let clock: @Sendable () -> Date
    private let drainingFlag = NIOLockedValueBox(false)

    /// Builds the API over an open database: loads (or creates) the token signing key.
    public init(
        database: any ChorusStore, registry: RoomRegistry, configuration: ControlAPIConfiguration = .init(),
        prometheus: PrometheusCollectorRegistry, clock: @escaping @Sendable () -> Date = { Date() }
    ) async throws {
        self.database = database
        self.registry = registry
        self.configuration = configuration
        self.prometheus = prometheus
        self.metrics = APIMetrics()
        self.clock = clock
        let key = try await database.serverSecret(named: "accessTokenKey") { SecureRandom.bytes(32) }
        self.tokens = AccessTokenSigner(key: key)
    }

    func now() -> Date { clock() }

    /// True once shutdown has begun: `/readyz` fails and no new rooms are created.
    public var isDraining: Bool { drainingFlag.withLockedValue { $0 } }

    public func beginDraining() {
        drainingFlag.withLockedValue { $0 = true }
    }

    /// Re-creates the live room actors for every room the database holds open (after a restart).
    public func reloadRooms() async throws {
        for (room, app) in try await database.allOpenRooms() {
            guard let key = app.applicationKey, let id = try? RoomID(validating: room.roomId) else { continue }
            _ = try? await registry.open(RoomKey(application: key, room: id), settings: room.settings)
        }
        metrics.openRooms.record(await registry.count)
    }

    /// The router with every route and middleware.
    public func makeRouter() -> Router<ChorusRequestContext> {
        let router = Router(context: ChorusRequestContext.self, options: .autoGenerateHeadEndpoints)
        router.add(middleware: ErrorMiddleware(metrics: metrics))
        router.add(middleware: MetricsMiddleware())
        // One structured access-log line per request, carrying hb.request.id (= x-request-id).
        router.add(middleware: LogRequestsMiddleware(.info))
        if let rate = configuration.rateLimitPerSecond, rate > 0 {
            router.add(middleware: RateLimitMiddleware(limiter: RateLimiter(perSecond: rate, burst: rate * 2)))
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
        routes.addMethodNotAllowed(to: router)
        return router
    }
}

extension RoomRecord {
    var settings: RoomSettings {
        RoomSettings(maxParticipants: maxParticipants, mixedSpeakers: mixedSpeakers, videoSlots: videoSlots)
    }
}
