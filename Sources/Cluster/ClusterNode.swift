import ChorusCore
import Foundation
import Logging
import Metrics
import Rooms
import Storage

/// Who this node is to the rest of the cluster.
public struct NodeIdentity: Sendable, Equatable {
    public var nodeId: String
    /// The node's own HTTP base URL (no trailing slash): redirects for its rooms point there.
    public var advertiseUrl: String
    /// "ip:port" of its media port, comma-separated.
    public var mediaAddresses: String

    public init(nodeId: String, advertiseUrl: String, mediaAddresses: String) {
        self.nodeId = nodeId
        self.advertiseUrl = advertiseUrl.hasSuffix("/") ? String(advertiseUrl.dropLast()) : advertiseUrl
        self.mediaAddresses = mediaAddresses
    }

    /// A node ID: 1–64 ASCII letters, digits, `.`, `_` or `-` (safe in logs, URLs and SQL).
    public static func isValidNodeId(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && text.utf8.allSatisfy(isNodeIdByte)
    }

    /// `text` made into a valid node ID (other bytes become `-`), e.g. from a host name.
    public static func nodeId(from text: String) -> String {
        let bytes = text.utf8.prefix(64).map { isNodeIdByte($0) ? $0 : UInt8(ascii: "-") }
        return bytes.isEmpty ? "node" : String(decoding: bytes, as: UTF8.self)
    }

    private static func isNodeIdByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }
}

/// The cluster's timing: how often a node writes its heartbeat, how long a lease lasts without
/// renewal, and how old a heartbeat is when its node counts as lost.
public struct ClusterTiming: Sendable {
    public var heartbeatInterval: TimeInterval = 2
    public var leaseDuration: TimeInterval = 10
    public var lossAfter: TimeInterval = 10

    public init() {}
}

/// This node's membership of the cluster: its heartbeat (load, lease renewal), the rooms it
/// holds leases on, and the sweep that ends a lost node's calls.
///
/// Driven by `ClusterService` (one `beat()` every `heartbeatInterval`) and by the API, which
/// calls `ensureFresh()` before placing or serving a room so that a node never acts on a lease
/// it has not renewed within the lease's duration. Rooms keep mixing when the database is
/// unreachable; only new joins wait (`leaseUnconfirmed`) until a renewal succeeds.
public actor ClusterNode {
    static let heartbeatsWritten = Counter(label: "chorus_cluster_heartbeats_total", dimensions: [("result", "written")])
    static let heartbeatsFailed = Counter(label: "chorus_cluster_heartbeats_total", dimensions: [("result", "failed")])
    static let heartbeatsSuperseded = Counter(label: "chorus_cluster_heartbeats_total", dimensions: [("result", "superseded")])
    static let nodesLost = Counter(label: "chorus_cluster_nodes_lost_total")
    static let roomsLost = Counter(label: "chorus_cluster_rooms_lost_total")

    public nonisolated let identity: NodeIdentity
    public nonisolated let timing: ClusterTiming
    /// This start of the node: its heartbeats write only over this run's row.
    public nonisolated let run: NodeRun
    let store: any ChorusStore
    let registry: RoomRegistry
    let clock: @Sendable () -> Date
    public nonisolated let logger: Logger
    private let startedAt: Date
    private var lastBeat: Date?
    /// Start of the current run of successful heartbeats: a node sweeps others only after a
    /// full loss period of its own health, so a database outage never makes everyone "lost".
    private var healthySince: Date?
    private var draining = false
    /// Set by a clean stop: no heartbeat may write the node "up" again afterwards.
    private var stopped = false
    /// How this run came to hold its node ID (set by `register`).
    public private(set) var claim: IdentityClaim?
    /// Set when another run took this node's ID over: its heartbeats write nothing any more.
    private var supersededBy: NodeRecord?
    private var inFlight: Task<Bool, Never>?
    private var cpu = CPUUsage()
    /// Rooms live here under a lease, with when they were placed.
    private var placed: [LeaseKey: (room: RoomKey, since: Date)] = [:]
    /// The other nodes' advertise URLs as last read, and when: redirects read them from here
    /// (at most `heartbeatInterval` old) rather than from the store each time.
    private var advertiseUrls: (readAt: Date, byNode: [String: String])?
    /// Called once when the node starts draining (asked through the store or by SIGTERM).
    private var onDrain: (@Sendable () async -> Void)?

    /// (application row ID, room ID): how the store names a lease.
    struct LeaseKey: Hashable {
        var applicationId: Int64
        var roomId: String
    }

    public init(identity: NodeIdentity, store: any ChorusStore, registry: RoomRegistry, timing: ClusterTiming = .init(),
                run: NodeRun = .current(), logger: Logger, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.identity = identity
        self.timing = timing
        self.run = run
        self.store = store
        self.registry = registry
        self.logger = logger
        self.clock = clock
        startedAt = clock()
    }

    /// Writes this node's row and retires its previous incarnation (its calls end `nodeLost`).
    /// Throws `NodeIdInUse`, writing nothing, when a live run elsewhere holds the node ID.
    public func register() async throws {
        claim = try await waitUntilTheIdIsFree()
        let now = clock()
        let ended = try await store.registerNode(row(at: now, participants: 0, rooms: 0))
        lastBeat = now
        healthySince = now
        if !ended.isEmpty {
            logger.warning("calls of this node's previous run ended nodeLost", metadata: ["calls": "\(ended.count)"])
        }
    }

    public func setDrainHandler(_ handler: @escaping @Sendable () async -> Void) {
        onDrain = handler
    }

    /// Whether this node renewed its leases within the lease's duration.
    public func isConfirmed() -> Bool {
        guard let lastBeat else { return false }
        return clock().timeIntervalSince(lastBeat) < timing.leaseDuration
    }

    /// Beats now when the last heartbeat is older than the interval; true when the node's
    /// leases are confirmed afterwards.
    public func ensureFresh() async -> Bool {
        if let lastBeat, clock().timeIntervalSince(lastBeat) < timing.heartbeatInterval { return true }
        _ = await beat()
        return isConfirmed()
    }

    /// One heartbeat; concurrent callers share the one in flight. True when it was written.
    @discardableResult
    public func beat() async -> Bool {
        if let inFlight { return await inFlight.value }
        let task = Task { await self.performBeat() }
        inFlight = task
        let result = await task.value
        inFlight = nil
        return result
    }

    private func performBeat() async -> Bool {
        guard !stopped else { return false }
        let started = clock()
        let counts = await registry.participantCounts()
        let rooms = await registry.count
        let node = row(at: started, participants: counts.progressing + counts.established, rooms: rooms)
        let outcome: HeartbeatOutcome
        do {
            outcome = try await store.heartbeat(node, leaseDuration: timing.leaseDuration)
        } catch {
            if healthySince != nil {
                logger.warning("heartbeat failed; rooms keep running, new joins wait", metadata: ["error": "\(error)"])
            }
            healthySince = nil
            Self.heartbeatsFailed.increment()
            return false
        }
        if let holder = outcome.supersededBy {
            noteSuperseded(by: holder)
            return false
        }
        Self.heartbeatsWritten.increment()
        lastBeat = started
        if healthySince == nil { healthySince = started }
        await settle(outcome, beatStarted: started)
        if outcome.draining, !draining { await startDraining() }
        if let since = healthySince, started.timeIntervalSince(since) >= timing.lossAfter { await sweep(now: started) }
        return true
    }

    /// Another run holds this node's ID (it started while this one could not reach the store):
    /// this run writes nothing more, so its leases lapse and its rooms move as a lost node's do.
    private func noteSuperseded(by holder: NodeRecord) {
        Self.heartbeatsSuperseded.increment()
        if supersededBy == nil {
            logger.error("another run took this node's ID over; this run no longer heartbeats", metadata: [
                "node": "\(identity.nodeId)", "holder": "\(holder.advertiseUrl)", "holderInstance": "\(holder.instanceId ?? "")",
            ])
        }
        supersededBy = holder
    }

    /// Ends the live rooms whose leases the heartbeat did not renew: closed by another node,
    /// or taken over after this node lost touch with the database.
    private func settle(_ outcome: HeartbeatOutcome, beatStarted: Date) async {
        let renewed = Set(outcome.renewed.map { LeaseKey(applicationId: $0.applicationId, roomId: $0.roomId) })
        let closed = Set(outcome.closed.map { LeaseKey(applicationId: $0.applicationId, roomId: $0.roomId) })
        for (lease, entry) in placed where !renewed.contains(lease) && entry.since < beatStarted {
            placed[lease] = nil
            let cause: EndCause = closed.contains(lease) ? .roomClosed : .nodeLost
            if cause == .nodeLost {
                Self.roomsLost.increment()
                logger.warning("lease lost to another node; room ended here", metadata: ["room": "\(lease.roomId)"])
            }
            await registry.close(entry.room, cause: cause)
        }
    }

    private func sweep(now: Date) async {
        do {
            for lost in try await store.sweepLostNodes(staleBefore: now.addingTimeInterval(-timing.lossAfter)) {
                Self.nodesLost.increment()
                logger.warning("node lost: its calls ended nodeLost", metadata: [
                    "node": "\(lost.nodeId)", "calls": "\(lost.endedCalls.count)",
                    "lastHeartbeat": "\(lost.lastHeartbeat)",
                ])
            }
        } catch {
            logger.warning("sweep for lost nodes failed", metadata: ["error": "\(error)"])
        }
    }

    /// No new placements here from now on; the drain handler decides when the rooms end.
    public func startDraining() async {
        guard !draining else { return }
        draining = true
        _ = try? await store.drainNode(identity.nodeId)
        logger.info("node draining: no new rooms placed here")
        if let onDrain { Task { await onDrain() } }
    }

    /// A clean stop: the node's leases go at once, so its rooms can be placed elsewhere.
    public func stop() async {
        stopped = true
        // A heartbeat already on its way must land before the "stopped" it would overwrite.
        if let inFlight { _ = await inFlight.value }
        placed.removeAll()
        try? await store.stopNode(identity.nodeId)
    }

    /// The advertise URL of `nodeId`, from a list at most a heartbeat interval old.
    public func advertiseUrl(of nodeId: String) async throws(StorageError) -> String? {
        let now = clock()
        if let cached = advertiseUrls, now.timeIntervalSince(cached.readAt) < timing.heartbeatInterval,
           let url = cached.byNode[nodeId] {
            return url
        }
        let nodes = try await store.nodes()
        advertiseUrls = (now, Dictionary(nodes.map { ($0.nodeId, $0.advertiseUrl) }, uniquingKeysWith: { $1 }))
        return advertiseUrls?.byNode[nodeId]
    }

    /// Records a room this node now runs under its lease.
    public func adopt(applicationId: Int64, roomId: String, room: RoomKey) {
        let key = LeaseKey(applicationId: applicationId, roomId: roomId)
        if placed[key] == nil { placed[key] = (room, clock()) }
    }

    /// Gives every lease up (the drain closed the rooms here): their rooms go elsewhere.
    public func releaseAll() async {
        let all = placed.keys
        placed.removeAll()
        for key in all {
            try? await store.releaseRoomLease(applicationId: key.applicationId, roomId: key.roomId, nodeId: identity.nodeId)
        }
    }

    /// Forgets a room that closed here and gives its lease up.
    public func release(applicationId: Int64, roomId: String) async {
        placed[LeaseKey(applicationId: applicationId, roomId: roomId)] = nil
        try? await store.releaseRoomLease(applicationId: applicationId, roomId: roomId, nodeId: identity.nodeId)
    }

    private func row(at now: Date, participants: Int, rooms: Int) -> NodeRecord {
        NodeRecord(nodeId: identity.nodeId, advertiseUrl: identity.advertiseUrl, mediaAddresses: identity.mediaAddresses,
                   state: draining ? "draining" : "up", startedAt: startedAt, heartbeatAt: now,
                   participants: participants, rooms: rooms, cpuPercent: cpu.percentSinceLastCall(),
                   instanceId: run.instanceId, processRef: run.processRef)
    }
}

/// The process's CPU use between two calls, in percent of one core (getrusage).
struct CPUUsage {
    private var last: (cpu: Double, wall: Double)?

    mutating func percentSinceLastCall() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        let wall = Date().timeIntervalSince1970
        defer { last = (cpu, wall) }
        guard let last, wall > last.wall else { return 0 }
        // Clamped before the conversion: Int(_:) traps on a value it cannot hold.
        let percent = (cpu - last.cpu) / (wall - last.wall) * 100
        return percent.isFinite ? Int(max(0, min(100_000, percent)).rounded()) : 0
    }
}
