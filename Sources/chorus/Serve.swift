import ArgumentParser
import ChorusCore
import Cluster
import ControlAPI
import Foundation
import Logging
import MediaSocket
import Rooms
import ServeSettings
import ServiceLifecycle

/// `chorus serve`: the composition root. Its options and their `CHORUS_*` fallbacks become a
/// checked `ServeConfiguration` (ServeSettings, tested on its own); `run()` only wires
/// services from it (`ServerAssembly`) and runs them in a ServiceGroup that drains on
/// SIGTERM/SIGINT. A bad setting stops it before anything opens, naming the option.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the server.")

    @OptionGroup var options: ServeOptions

    func run() async throws {
        // Before any socket: the descriptor limit bounds what the server can hold (see
        // DescriptorLimit), and the HTTP connection limit's default follows it.
        let descriptors = DescriptorLimit.raise()
        let settings: ServeConfiguration
        do {
            settings = try ServeConfiguration(options: options, environment: ProcessInfo.processInfo.environment,
                                              host: .current(descriptorLimit: descriptors.to))
        } catch {
            throw ValidationError(error.description)
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = settings.logLevel
            return handler
        }
        let logger = Logger(label: "chorus")
        if descriptors.to != descriptors.from {
            logger.info("descriptor limit raised", metadata: ["from": "\(descriptors.from)", "to": "\(descriptors.to)"])
        }
        let server = try await ServerAssembly.wire(settings, logger: logger)
        try await server.run()
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
