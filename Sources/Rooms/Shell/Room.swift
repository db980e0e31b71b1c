import AudioMixer
import ChorusCore
import Dispatch
import Foundation
import Logging
import PeerTransport
import Synchronization

/// One conference room: the shell around its `RoomCore`. An actor whose executor is its own
/// serial `DispatchQueue`: packet handling (datagrams hop onto the queue from the socket), the
/// 20 ms tick (a `DispatchSourceTimer` on the same queue) and control calls (join, mute, kick,
/// close) all run on one thread of control, without locks.
///
/// The shell owns what the core must not touch: the queue and timer, the clock (read once per
/// step from `MediaEnvironment.clock` and handed to the core as `now`), the sink the core's
/// datagrams leave through, the router's receivers, and the event log and subscribers. Each
/// step calls the core with the shell's `RoomOutput`, then carries it out (`carryOut`).
///
/// Driven by `RoomRegistry` (open, close) and by the control API through the registry.
public actor Room {
    public let key: RoomKey
    nonisolated let executor: SerialQueueExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    let logger: Logger
    let media: MediaEnvironment?
    nonisolated let clock: any RoomClock
    let observer: RoomEventObserver?
    let core: RoomCore
    var log = RoomEventLog()
    /// What the core's steps produced, carried out after each; reused (never reallocated).
    var output = RoomOutput()
    /// The router's handle on each participant (hops datagrams onto this room's queue).
    var connections: [CallID: ParticipantConnection] = [:]
    /// The room's own tick timer (`Room+Ticks`): a big room's, or any room's without a tick source.
    var timer: (any DispatchSourceTimer)?
    /// The tick source's handle on this room while the source fires its ticks (`Room+Ticks`).
    var ticker: RoomTicker?
    /// Until when (the room clock's nanoseconds) the socket's reader may run this room's
    /// datagrams on its own thread (`ParticipantConnection`), as `RoomScheduling.inlineUntil`
    /// says after each tick; zero before the first. Written on the room's queue, read by the
    /// reader.
    nonisolated let inlineUntil = Atomic<UInt64>(0)
    /// The recording's files while one runs (`Room+Recording`).
    var recordingFiles: RecordingFiles?
    /// Where a fanned-out step's batches are sent from (`LaneSenders`); made at the first.
    var laneSenders: LaneSenders?

    public init(key: RoomKey, settings: RoomSettings, logger: Logger, media: MediaEnvironment? = nil,
                observer: RoomEventObserver? = nil) {
        self.key = key
        self.executor = SerialQueueExecutor(label: "chorus.room.\(key)")
        var logger = logger
        logger[metadataKey: "room"] = "\(key.room)"
        self.logger = logger
        self.media = media
        self.clock = media?.clock ?? SystemRoomClock()
        self.observer = observer
        self.core = RoomCore(key: key, settings: settings, media: media?.core, wallClock: WallClock(clock),
                             logger: logger)
    }

    isolated deinit {
        // A resumed dispatch source outlives its owner unless cancelled; the tick source would
        // keep the handle until its next firing.
        stopTicks()
    }

    /// The queue the room's work runs on.
    public nonisolated var queue: DispatchQueue { executor.queue }

    public var settings: RoomSettings { core.settings }
    public var isClosed: Bool { core.isClosed }

    /// Applies new settings; a closed room refuses them. A new `mixedSpeakers` takes effect at
    /// the next tick; the others apply to later joins.
    public func update(settings newSettings: RoomSettings) throws(RoomError) {
        try core.update(settings: newSettings)
        logger.debug("room settings updated")
    }

    /// Closes the room: every participant ends with `cause`, then `room.closed`. Idempotent.
    /// Returns true on the call that closed it.
    @discardableResult
    public func close(cause: EndCause = .roomClosed) -> Bool {
        guard core.close(cause: cause, now: clock.now(), into: &output) else { return false }
        carryOut()
        stopTicks()
        log.finishAll()
        logger.info("room stopped")
        return true
    }

    /// Events after `lastEventID` (still buffered) and a stream of the ones that follow.
    public func subscribe(after lastEventID: UInt64?) -> (replay: [RoomEventRecord], live: AsyncStream<RoomEventRecord>) {
        let (stream, continuation) = AsyncStream.makeStream(of: RoomEventRecord.self, bufferingPolicy: .bufferingNewest(1024))
        let replay = log.events(after: lastEventID)
        if isClosed {
            continuation.finish()
        } else {
            let id = log.subscribe(continuation)
            continuation.onTermination = { [weak self] _ in
                guard let self else { return }
                Task { await self.unsubscribe(id) }
            }
        }
        return (replay, stream)
    }

    private func unsubscribe(_ id: UInt64) {
        log.unsubscribe(id)
    }

    /// The number of speakers the running mixer holds (follows `settings.mixedSpeakers`).
    public var mixedSpeakersInEffect: Int { core.mixedSpeakersInEffect }

    /// Participants not yet ended.
    public var activeCount: Int { core.activeCount }

    /// Distinct mix encodes so far.
    public var audioEncodeCount: UInt64 { core.audioEncodeCount }
}
