import ChorusCore
import Dispatch
import Logging

/// One conference room. An actor whose executor is its own serial `DispatchQueue`, so that its
/// media work (the mixer tick, packet handling, added by the media issues) and its control calls
/// (settings, close) all run on one thread of control without locks.
///
/// Driven by `RoomRegistry` (create, close) and by the control API through the registry
/// (settings). It never touches sockets or storage: what leaves it are return values.
public actor Room {
    public let key: RoomKey
    private let executor: SerialQueueExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    public private(set) var settings: RoomSettings
    public private(set) var isClosed = false
    private let logger: Logger

    public init(key: RoomKey, settings: RoomSettings, logger: Logger) {
        self.key = key
        self.settings = settings
        self.executor = SerialQueueExecutor(label: "chorus.room.\(key)")
        var logger = logger
        logger[metadataKey: "room"] = "\(key.room)"
        self.logger = logger
    }

    /// The queue the room's work runs on: the media issues arm their timer on it.
    public nonisolated var queue: DispatchQueue { executor.queue }

    /// Applies new settings; a closed room refuses them.
    public func update(settings newSettings: RoomSettings) throws(RoomError) {
        guard !isClosed else { throw .closed }
        settings = newSettings
        logger.debug("room settings updated")
    }

    /// Closes the room. Idempotent. Returns true on the call that closed it.
    @discardableResult
    public func close() -> Bool {
        guard !isClosed else { return false }
        isClosed = true
        logger.info("room stopped")
        return true
    }
}

/// Errors a room's control calls can raise; the API maps each to a status and code.
public enum RoomError: Error, Equatable, Sendable {
    case closed
    case alreadyExists
    case notFound
}
