import Foundation
import Logging
import ServiceLifecycle

/// Runs the node's heartbeat every `heartbeatInterval` until its turn to shut down. Listed
/// before the HTTP server and the drain in the service group (which shuts down in reverse), so
/// it keeps beating, and renewing leases, while the node drains; the drain marks it stopped.
public struct ClusterService: Service {
    let node: ClusterNode

    public init(node: ClusterNode) {
        self.node = node
    }

    public func run() async throws {
        let interval = Duration.milliseconds(Int(node.timing.heartbeatInterval * 1000))
        let node = self.node
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await node.beat()
                try await Task.sleep(for: interval)
            }
        }
    }
}
