import ChorusCore
import Logging

/// Owns every live `Room` actor, keyed by (application, room ID). The only cross-room state in
/// the server; finding a room is one dictionary lookup.
///
/// Driven by the control API: `open` when a room is created (or reloaded at start), `room(for:)`
/// on every request that touches a room, `close` on delete, `closeAll` at shutdown.
public actor RoomRegistry {
    private var rooms: [RoomKey: Room] = [:]
    private let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    /// Starts a room; throws `alreadyExists` when one with the same key is live.
    @discardableResult
    public func open(_ key: RoomKey, settings: RoomSettings) throws(RoomError) -> Room {
        guard rooms[key] == nil else { throw .alreadyExists }
        let room = Room(key: key, settings: settings, logger: logger)
        rooms[key] = room
        return room
    }

    public func room(for key: RoomKey) -> Room? {
        rooms[key]
    }

    /// Closes and forgets a room; nil when there was none.
    @discardableResult
    public func close(_ key: RoomKey) async -> Room? {
        guard let room = rooms.removeValue(forKey: key) else { return nil }
        await room.close()
        return room
    }

    /// Closes every room (server shutdown).
    public func closeAll() async {
        let all = rooms
        rooms.removeAll()
        for room in all.values {
            await room.close()
        }
    }

    public var count: Int { rooms.count }
}
