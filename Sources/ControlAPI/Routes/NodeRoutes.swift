import Cluster
import Foundation
import Hummingbird
import Storage

/// A node as `GET /v1/nodes` shows it.
struct NodeResponse: Encodable {
    var nodeId: String
    var advertiseUrl: String
    var mediaAddresses: [String]
    var state: String
    /// Whether its heartbeat is recent enough for it to hold rooms.
    var live: Bool
    var startedAt: Date
    var heartbeatAt: Date
    var participants: Int
    var rooms: Int
    var cpuPercent: Int
    /// The node's current run (a UUID per start); absent for rows written before runs existed.
    var instanceId: String?

    init(_ node: NodeRecord, now: Date, lossAfter: TimeInterval) {
        nodeId = node.nodeId
        advertiseUrl = node.advertiseUrl
        mediaAddresses = node.mediaAddresses.split(separator: ",").map(String.init)
        state = node.state
        live = (node.state == "up" || node.state == "draining") && now.timeIntervalSince(node.heartbeatAt) < lossAfter
        startedAt = node.startedAt
        heartbeatAt = node.heartbeatAt
        participants = node.participants
        rooms = node.rooms
        cpuPercent = node.cpuPercent
        instanceId = node.instanceId
    }
}

extension ControlAPI {
    /// The cluster's nodes, application credentials only: any node answers from the store.
    func addNodeRoutes(_ group: RouterGroup<ChorusRequestContext>, _ routes: inout RouteTable) {
        group.route(&routes, .get, "/v1/nodes") { _, context in
            _ = try context.requireApplication()
            let now = self.now()
            let nodes = try await self.database.nodes().map {
                NodeResponse($0, now: now, lossAfter: self.cluster.timing.lossAfter)
            }
            return JSONBody.response(["nodes": nodes])
        }
        group.route(&routes, .post, "/v1/nodes/{nodeId}/drain") { _, context in
            _ = try context.requireApplication()
            guard let nodeId = context.parameters.get("nodeId"), NodeIdentity.isValidNodeId(nodeId) else {
                throw APIError.badRequest("invalidNodeId", "a node ID is 1-64 letters, digits, '.', '_' or '-'")
            }
            if nodeId == self.cluster.identity.nodeId {
                await self.cluster.startDraining()
            } else {
                guard try await self.database.drainNode(nodeId) else {
                    throw APIError(.notFound, "nodeNotFound", "no live node with this nodeId")
                }
            }
            guard let node = try await self.database.nodes().first(where: { $0.nodeId == nodeId }) else {
                throw APIError(.notFound, "nodeNotFound", "no live node with this nodeId")
            }
            return JSONBody.response(NodeResponse(node, now: self.now(), lossAfter: self.cluster.timing.lossAfter),
                                     status: .accepted)
        }
    }
}
