import Foundation
import GRDB

/// One Chorus node as the cluster sees it: where clients reach it, its state and the load it
/// reported with its last heartbeat.
public struct NodeRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "node"
    public var nodeId: String
    /// The node's own HTTP base URL, where redirects for its rooms point.
    public var advertiseUrl: String
    /// The media addresses clients connect to, "ip:port" comma-separated.
    public var mediaAddresses: String
    /// "up", "draining" (no new placements), "stopped" (shut down cleanly) or "lost".
    public var state: String
    public var startedAt: Date
    public var heartbeatAt: Date
    public var participants: Int
    public var rooms: Int
    public var cpuPercent: Int
    /// The run of the node that wrote the row (a fresh UUID per start): a heartbeat writes only
    /// over its own run's row, so two processes given one node ID never act as one.
    public var instanceId: String?
    /// Where that run is: "host boot-id pid", so that a restart on the same machine can tell
    /// its own dead predecessor from a live twin without waiting for heartbeats.
    public var processRef: String?

    public init(nodeId: String, advertiseUrl: String, mediaAddresses: String, state: String = "up",
                startedAt: Date, heartbeatAt: Date, participants: Int = 0, rooms: Int = 0, cpuPercent: Int = 0,
                instanceId: String? = nil, processRef: String? = nil) {
        self.nodeId = nodeId
        self.advertiseUrl = advertiseUrl
        self.mediaAddresses = mediaAddresses
        self.state = state
        self.startedAt = startedAt
        self.heartbeatAt = heartbeatAt
        self.participants = participants
        self.rooms = rooms
        self.cpuPercent = cpuPercent
        self.instanceId = instanceId
        self.processRef = processRef
    }

    /// Up or draining with a heartbeat after `liveAfter`: a node the cluster counts on.
    public func isLive(after liveAfter: Date) -> Bool {
        (state == "up" || state == "draining") && heartbeatAt > liveAfter
    }
}

/// The node that owns a room until `expiresAt`, unless it renews the lease first.
public struct RoomLease: Sendable, Equatable {
    public var applicationId: Int64
    public var roomId: String
    public var nodeId: String
    public var expiresAt: Date

    public init(applicationId: Int64, roomId: String, nodeId: String, expiresAt: Date) {
        self.applicationId = applicationId
        self.roomId = roomId
        self.nodeId = nodeId
        self.expiresAt = expiresAt
    }
}

/// What a heartbeat learnt: the rooms whose leases this node still holds (renewed), those
/// released because their room was closed (by any node), and whether someone asked it to drain.
/// `supersededBy` is set (and nothing written) when another run of the same node ID holds the
/// row: this run has lost its identity.
public struct HeartbeatOutcome: Sendable, Equatable {
    public var renewed: [RoomLease]
    public var closed: [RoomLease]
    public var draining: Bool
    public var supersededBy: NodeRecord?

    public init(renewed: [RoomLease], closed: [RoomLease], draining: Bool, supersededBy: NodeRecord? = nil) {
        self.renewed = renewed
        self.closed = closed
        self.draining = draining
        self.supersededBy = supersededBy
    }
}

/// A node declared lost and the calls that were ended for it.
public struct LostNode: Sendable, Equatable {
    public var nodeId: String
    public var lastHeartbeat: Date
    public var endedCalls: [CallRecord]

    public init(nodeId: String, lastHeartbeat: Date, endedCalls: [CallRecord]) {
        self.nodeId = nodeId
        self.lastHeartbeat = lastHeartbeat
        self.endedCalls = endedCalls
    }
}

/// The cluster's shared state — nodes, their heartbeats and room leases — with the atomic
/// steps placement needs. Every `ChorusStore` implements it: on SQLite the cluster is the one
/// node, on PostgreSQL every node that shares the database.
///
/// Times are the callers' clocks (nodes are expected to be NTP-synchronised); a lease is
/// valid while `expiresAt > now`.
public protocol ClusterStore: Sendable {
    /// Writes a starting node's row ("up", or "draining" when asked), and retires its previous
    /// incarnation: that one's open calls end `nodeLost` (at its last heartbeat) and its
    /// leases go, so a restarted node never resurrects its old rooms. Returns the ended calls.
    func registerNode(_ node: NodeRecord) async throws(StorageError) -> [CallRecord]

    /// Records the node's load and time, keeps a "draining" set by anyone, and renews the
    /// leases it holds on rooms that are still open (`expiresAt = now + leaseDuration`);
    /// leases of closed rooms are released. When the row belongs to another run (its
    /// `instanceId` differs) nothing is written and the outcome names that run.
    func heartbeat(_ node: NodeRecord, leaseDuration: TimeInterval) async throws(StorageError) -> HeartbeatOutcome

    /// Every node, by ID.
    func nodes() async throws(StorageError) -> [NodeRecord]

    /// Sets a node "draining" (no new placements); false when there is no such live node.
    func drainNode(_ nodeId: String) async throws(StorageError) -> Bool

    /// A clean stop: the node is "stopped" and releases its leases.
    func stopNode(_ nodeId: String) async throws(StorageError)

    /// The valid lease of a room, or nil when it is not placed.
    func roomLease(applicationId: Int64, roomId: String, now: Date) async throws(StorageError) -> RoomLease?

    /// Places a room in one atomic step: the valid lease when there is one, else a new lease
    /// for the least-loaded live node ("up", heartbeat after `liveAfter`; fewest leased rooms,
    /// then fewest participants). nil when no node is live. Of concurrent placements of one
    /// room, all return the same lease.
    func placeRoom(applicationId: Int64, roomId: String, now: Date, liveAfter: Date, leaseDuration: TimeInterval)
        async throws(StorageError) -> RoomLease?

    /// Gives a room's lease up (its room closed here), if `nodeId` still holds it.
    func releaseRoomLease(applicationId: Int64, roomId: String, nodeId: String) async throws(StorageError)

    /// Declares every "up" or "draining" node whose heartbeat is older than `staleBefore`
    /// lost: its open calls end `nodeLost` at its last heartbeat and its leases go. Each lost
    /// node is claimed by exactly one caller.
    func sweepLostNodes(staleBefore: Date) async throws(StorageError) -> [LostNode]
}
