import ChorusCore
import Cluster
import Foundation
import HTTPTypes
import Hummingbird
import Metrics
import Rooms
import Storage

/// A request for a room that another node runs: `ErrorMiddleware` answers it `307` to the same
/// path and query on that node (RFC 9110 section 15.4.8 keeps the method and body; RFC 9725 lets
/// WHIP clients follow it).
struct RoomElsewhere: Error {
    var nodeId: String
    var advertiseUrl: String

    static let redirects = Counter(label: "chorus_cluster_redirects_total")

    func response(for request: Request) -> Response {
        Self.redirects.increment()
        var target = advertiseUrl + request.uri.path
        if let query = request.uri.query, !query.isEmpty { target += "?" + query }
        let error = APIError(.temporaryRedirect, "roomElsewhere", "this room runs on node \(nodeId): \(target)",
                             headers: [.location: target])
        return error.response()
    }
}

extension APIError {
    static let leaseUnconfirmed = APIError(
        .serviceUnavailable, "leaseUnconfirmed",
        "this node cannot confirm its room leases with the database; try again shortly",
        headers: [.retryAfter: "2"])
    static let noLiveNode = APIError(
        .serviceUnavailable, "noLiveNode", "no live node can take this room now", headers: [.retryAfter: "2"])
}

/// Room placement: a room runs on exactly one node, the holder of its lease in the store.
/// Joins place an unplaced room on the least-loaded live node; requests for a room placed
/// elsewhere are redirected there; a node opens a room leased to it on first use.
extension ControlAPI {
    /// The live room for a join, placed (and created, for applications that allow it) when
    /// needed; `created` says whether this join created the stored room.
    func placedRoomForJoin(_ app: ApplicationRecord, _ roomId: RoomID) async throws -> (Room, created: Bool) {
        guard let key = app.applicationKey else { throw APIError.roomNotFound }
        guard await cluster.ensureFresh() else { throw APIError.leaseUnconfirmed }
        let roomKey = RoomKey(application: key, room: roomId)
        if let room = await registry.room(for: roomKey) { return (room, false) }
        // Placed on another node: redirect at the cost of one lookup (the common case behind a
        // load balancer that knows nothing of rooms).
        if let lease = try await database.roomLease(applicationId: app.id ?? -1, roomId: roomId.rawValue, now: now()),
           lease.nodeId != cluster.identity.nodeId {
            throw try await elsewhere(lease.nodeId)
        }
        var created = false
        var stored = try await database.openRoom(applicationId: app.id ?? -1, roomId: roomId.rawValue)
        if stored == nil {
            guard app.autoCreateRooms else { throw APIError.roomNotFound }
            let settings = RoomSettings.defaults
            do {
                stored = try await database.insertRoom(RoomRecord(
                    applicationId: app.id ?? -1, roomId: roomId.rawValue, maxParticipants: settings.maxParticipants,
                    mixedSpeakers: settings.mixedSpeakers, videoSlots: settings.videoSlots, createdAt: now()))
                created = true
            } catch {
                // Created concurrently by another join: use the stored one.
                guard case .conflict = error else { throw error }
                stored = try await database.openRoom(applicationId: app.id ?? -1, roomId: roomId.rawValue)
            }
        }
        guard let stored else { throw APIError.roomNotFound }
        let room = try await place(stored, roomKey, placing: true)
        return (room, created)
    }

    /// Places a stored room (or finds its placement) and returns its live actor here; throws
    /// `RoomElsewhere` when another node holds it, `noLiveNode` when nobody can take it.
    /// With `placing` false an unplaced room is not placed (404).
    func place(_ record: RoomRecord, _ roomKey: RoomKey, placing: Bool) async throws -> Room {
        var lease = try await lease(of: record, placing: placing)
        if lease.nodeId == cluster.identity.nodeId, isDraining, await registry.room(for: roomKey) == nil {
            // A draining node does not bring a room back: its lease goes, and the room is
            // placed on another node.
            await cluster.release(applicationId: record.applicationId, roomId: record.roomId)
            lease = try await self.lease(of: record, placing: placing)
        }
        guard lease.nodeId == cluster.identity.nodeId else { throw try await elsewhere(lease.nodeId) }
        let room: Room
        do {
            room = try await registry.open(roomKey, settings: record.settings)
            // Opened here: the calls a lost node's run of the room left behind are told first.
            await announceDepartures(of: record, in: room)
        } catch {
            guard let existing = await registry.room(for: roomKey) else { throw APIError.roomNotFound }
            room = existing
        }
        await cluster.adopt(applicationId: record.applicationId, roomId: record.roomId, room: roomKey)
        return room
    }

    /// The room's lease: placed now (`placing`) or only looked up (404 when there is none).
    private func lease(of record: RoomRecord, placing: Bool) async throws -> RoomLease {
        let now = now()
        guard placing else {
            guard let lease = try await database.roomLease(applicationId: record.applicationId, roomId: record.roomId,
                                                           now: now)
            else { throw APIError.roomNotFound }
            return lease
        }
        // The store must know this node drains before it places anything.
        if isDraining { await cluster.startDraining() }
        guard let lease = try await database.placeRoom(
            applicationId: record.applicationId, roomId: record.roomId, now: now,
            liveAfter: now.addingTimeInterval(-cluster.timing.lossAfter), leaseDuration: cluster.timing.leaseDuration)
        else { throw isDraining ? APIError.draining : APIError.noLiveNode }
        return lease
    }

    /// The live room named by a request that does not place rooms (or, with `placing`, one
    /// that places a stored open room nobody holds: a listener coming back after the room's
    /// node was lost): here, or a redirect to its node, or 404.
    func existingRoom(_ app: ApplicationRecord, _ roomId: RoomID, placing: Bool = false) async throws -> Room {
        guard let key = app.applicationKey else { throw APIError.roomNotFound }
        let roomKey = RoomKey(application: key, room: roomId)
        if let room = await registry.room(for: roomKey) { return room }
        guard let record = try await database.openRoom(applicationId: app.id ?? -1, roomId: roomId.rawValue) else {
            throw APIError.roomNotFound
        }
        if placing { guard await cluster.ensureFresh() else { throw APIError.leaseUnconfirmed } }
        return try await place(record, roomKey, placing: placing)
    }

    /// Throws `RoomElsewhere` when another node holds the room's lease.
    func redirectIfElsewhere(_ record: RoomRecord) async throws {
        guard let lease = try await database.roomLease(applicationId: record.applicationId, roomId: record.roomId,
                                                       now: now()),
              lease.nodeId != cluster.identity.nodeId
        else { return }
        throw try await elsewhere(lease.nodeId)
    }

    /// Whether a live node other than this one takes placements.
    func otherNodeCanPlace() async throws -> Bool {
        let liveAfter = now().addingTimeInterval(-cluster.timing.lossAfter)
        return try await database.nodes().contains {
            $0.nodeId != cluster.identity.nodeId && $0.state == "up" && $0.heartbeatAt > liveAfter
        }
    }

    /// Tells the room's stream of the calls a lost node's run of it left behind
    /// (`ClusterNode.departures(of:)`). A database error leaves the room unannounced (the
    /// sweeper still ends the calls), never the join failed.
    private func announceDepartures(of record: RoomRecord, in room: Room) async {
        do {
            await room.announce(departures: try await cluster.departures(of: record))
        } catch {
            cluster.logger.warning("calls lost with their node not announced", metadata: [
                "room": "\(record.roomId)", "error": "\(error)",
            ])
        }
    }

    private func elsewhere(_ nodeId: String) async throws -> RoomElsewhere {
        guard let url = try await cluster.advertiseUrl(of: nodeId) else { throw APIError.noLiveNode }
        return RoomElsewhere(nodeId: nodeId, advertiseUrl: url)
    }
}
