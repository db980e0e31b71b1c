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
    private let media: MediaEnvironment?
    private let observer: RoomEventObserver?

    /// `media` is nil only for control-plane tests that never join; `observer` sees every
    /// event of every room (the call-record writer).
    public init(logger: Logger, media: MediaEnvironment? = nil, observer: RoomEventObserver? = nil) {
        self.logger = logger
        self.media = media
        self.observer = observer
    }

    /// Starts a room; throws `alreadyExists` when one with the same key is live.
    @discardableResult
    public func open(_ key: RoomKey, settings: RoomSettings) throws(RoomError) -> Room {
        guard rooms[key] == nil else { throw .alreadyExists }
        let room = Room(key: key, settings: settings, logger: logger, media: media, observer: observer)
        rooms[key] = room
        return room
    }

    public func room(for key: RoomKey) -> Room? {
        rooms[key]
    }

    /// Closes and forgets a room; its participants end with `cause`. nil when there was none.
    @discardableResult
    public func close(_ key: RoomKey, cause: EndCause = .roomClosed) async -> Room? {
        guard let room = rooms.removeValue(forKey: key) else { return nil }
        await room.close(cause: cause)
        return room
    }

    /// Stops every room at shutdown: participants end `serverShutdown`.
    public func closeAll() async {
        let all = rooms
        rooms.removeAll()
        for room in all.values {
            await room.close(cause: .serverShutdown)
        }
    }

    /// Participants by state across rooms, for /metrics.
    public func participantCounts() async -> (progressing: Int, established: Int) {
        var total = (progressing: 0, established: 0)
        for room in rooms.values {
            let counts = await room.stateCounts()
            total.progressing += counts.progressing
            total.established += counts.established
        }
        return total
    }

    public var count: Int { rooms.count }
}
