import AudioMixer
import ChorusCore
import Dispatch
import Foundation
import Logging
import PeerTransport

/// One conference room. An actor whose executor is its own serial `DispatchQueue`: packet
/// handling (datagrams hop onto the queue from the socket), the 20 ms tick (a
/// `DispatchSourceTimer` on the same queue) and control calls (join, mute, kick, close) all run
/// on one thread of control, without locks.
///
/// Driven by `RoomRegistry` (open, close) and by the control API through the registry. It never
/// touches sockets or storage: datagrams leave through the `MediaEnvironment`'s sink, and what
/// happened leaves as `RoomEvent`s to the observer and the event-stream subscribers.
public actor Room {
    public let key: RoomKey
    private let executor: SerialQueueExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    public private(set) var settings: RoomSettings
    public private(set) var isClosed = false
    let logger: Logger
    let media: MediaEnvironment?
    let observer: RoomEventObserver?
    var log = RoomEventLog()
    var participants: [CallID: Participant] = [:]
    var timer: (any DispatchSourceTimer)?
    /// The 20 ms audio tick grid (a late timer is caught up without drift).
    var tickGrid = TickGrid(periodMilliseconds: Room.tickMilliseconds)
    var mixer: RoomAudioMixer<CallID>
    /// Arrival time of the datagram being handled (transport events carry no time of their own).
    var lastPacketTime = MediaTime(nanoseconds: 0)
    var encoders = MixEncoders()
    /// One recipient's mix packet, rebuilt for each (kept for its capacity).
    var mixPacket: [UInt8] = []
    /// Participants in the order they joined: the slot order of publishers nobody pinned.
    var joinOrder: [CallID] = []
    /// The room's dominant speakers, most recent first: they rank next after pins for slots.
    var recentSpeakers: [CallID] = []
    /// Reused buffer for the packets the forwarder writes (one per slot, then protected).
    var videoScratch: [UInt8] = []
    /// For each publisher, the (subscriber, slot index) pairs showing it or switching to it:
    /// rebuilt when slots are reassigned, so a packet visits only its own viewers.
    var slotViewers: [CallID: [(subscriber: CallID, slot: Int)]] = [:]
    /// The room's way out to the media socket: what a tick (or one forwarded packet) sends
    /// leaves as one batch.
    let sink: BatchingSink?

    public init(key: RoomKey, settings: RoomSettings, logger: Logger, media: MediaEnvironment? = nil,
                observer: RoomEventObserver? = nil) {
        self.key = key
        self.settings = settings
        self.executor = SerialQueueExecutor(label: "chorus.room.\(key)")
        var logger = logger
        logger[metadataKey: "room"] = "\(key.room)"
        self.logger = logger
        self.media = media
        self.sink = media.map { BatchingSink(target: $0.sink) }
        self.observer = observer
        self.mixer = RoomAudioMixer(configuration: AudioMixerConfiguration(mixedSpeakers: settings.mixedSpeakers))
    }

    isolated deinit {
        // A resumed dispatch source outlives its owner unless cancelled.
        timer?.cancel()
    }

    /// The queue the room's work runs on.
    public nonisolated var queue: DispatchQueue { executor.queue }

    /// Applies new settings; a closed room refuses them. A new `mixedSpeakers` takes effect at
    /// the next tick; the others apply to later joins.
    public func update(settings newSettings: RoomSettings) throws(RoomError) {
        guard !isClosed else { throw .closed }
        if newSettings.mixedSpeakers != settings.mixedSpeakers { mixer.setMixedSpeakers(newSettings.mixedSpeakers) }
        settings = newSettings
        logger.debug("room settings updated")
    }

    /// Closes the room: every participant ends with `cause`, then `room.closed`. Idempotent.
    /// Returns true on the call that closed it.
    @discardableResult
    public func close(cause: EndCause = .roomClosed) -> Bool {
        guard !isClosed else { return false }
        for callId in participants.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            end(callId, cause: cause)
        }
        isClosed = true
        timer?.cancel()
        timer = nil
        emit("room.closed", ["roomId": .string(key.room.rawValue)])
        log.finishAll()
        logger.info("room stopped")
        return true
    }

    /// Records an event: buffered for `Last-Event-ID`, pushed to subscribers and the observer.
    @discardableResult
    func emit(_ name: String, _ fields: [String: EventField]) -> RoomEvent {
        let event = log.append(name, fields, at: Date())
        observer?(key, event)
        return event
    }

    /// Events after `lastEventID` (still buffered) and a stream of the ones that follow.
    public func subscribe(after lastEventID: UInt64?) -> (replay: [RoomEvent], live: AsyncStream<RoomEvent>) {
        let (stream, continuation) = AsyncStream.makeStream(of: RoomEvent.self, bufferingPolicy: .bufferingNewest(1024))
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
    public var mixedSpeakersInEffect: Int { mixer.configuration.mixedSpeakers }

    /// Participants not yet ended.
    public var activeCount: Int { participants.count }
}

/// Errors a room's control calls can raise; the API maps each to a status and code.
public enum RoomError: Error, Equatable, Sendable {
    case closed
    case alreadyExists
    case notFound
}
