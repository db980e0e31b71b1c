import ChorusCore
import Dispatch
import Logging
import Rooms
import Testing

@Suite("Rooms and the registry")
struct RoomRegistryTests {
    let app = ApplicationKey(randomBytes: Array(repeating: 2, count: 16))

    func key(_ room: String) -> RoomKey { RoomKey(application: app, room: try! RoomID(validating: room)) }

    @Test func openFindClose() async throws {
        let registry = RoomRegistry(logger: Logger(label: "test"))
        let room = try await registry.open(key("a"), settings: .defaults)
        await #expect(throws: RoomError.alreadyExists) { try await registry.open(key("a"), settings: .defaults) }
        #expect(await registry.room(for: key("a")) === room)
        #expect(await registry.count == 1)
        #expect(await registry.close(key("a")) === room)
        #expect(await room.isClosed)
        #expect(await registry.close(key("a")) == nil)
        await #expect(throws: RoomError.closed) { try await room.update(settings: .defaults) }
    }

    @Test func mixedSpeakersOfALiveRoomFollowsItsSettings() async throws {
        let room = Room(key: key("m"), settings: .defaults, logger: Logger(label: "test"))
        #expect(await room.mixedSpeakersInEffect == 3)
        var settings = RoomSettings.defaults
        settings.mixedSpeakers = 6
        try await room.update(settings: settings)
        #expect(await room.mixedSpeakersInEffect == 6)
    }

    @Test func sameRoomIDInTwoApplicationsAreTwoRooms() async throws {
        let registry = RoomRegistry(logger: Logger(label: "test"))
        let other = RoomKey(application: ApplicationKey(randomBytes: Array(repeating: 3, count: 16)),
                            room: try RoomID(validating: "a"))
        let first = try await registry.open(key("a"), settings: .defaults)
        let second = try await registry.open(other, settings: .defaults)
        #expect(first !== second)
    }

    @Test func roomWorkRunsOnItsOwnQueue() async throws {
        let room = Room(key: key("q"), settings: .defaults, logger: Logger(label: "test"))
        let queue = room.queue
        let onQueue = await room.runsOn(queue)
        #expect(onQueue)
        // A timer on the room's queue may enter the actor synchronously.
        let viaTimer = await withCheckedContinuation { continuation in
            queue.async {
                let settings = room.assumeIsolated { $0.settings }
                continuation.resume(returning: settings)
            }
        }
        #expect(viaTimer == .defaults)
    }

    @Test func settingsRangesAreChecked() {
        var settings = RoomSettings.defaults
        #expect(throws: Never.self) { try settings.validate() }
        settings.mixedSpeakers = 0
        #expect(throws: RoomSettings.OutOfRange.self) { try settings.validate() }
        settings = .defaults
        settings.maxParticipants = 10_001
        #expect(throws: RoomSettings.OutOfRange.self) { try settings.validate() }
        settings = .defaults
        settings.videoSlots = -1
        #expect(throws: RoomSettings.OutOfRange.self) { try settings.validate() }
    }
}

extension Room {
    /// True when the actor's code runs on `queue` (its executor is that queue).
    func runsOn(_ queue: DispatchQueue) -> Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        return true
    }
}
