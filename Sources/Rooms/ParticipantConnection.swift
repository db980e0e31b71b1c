import ChorusCore
import Synchronization

/// The router's handle on one participant: hops each datagram onto the room's queue and into
/// the room actor synchronously (`assumeIsolated`), so packets never wait behind async hops.
/// `@unchecked Sendable`: its stored properties are immutable (`room` is a weak reference read
/// only to capture it), and everything it does with the room happens on the room's queue.
final class ParticipantConnection: DatagramReceiver, @unchecked Sendable {
    let callId: CallID
    private weak var room: Room?
    private let queue: DispatchQueueHandle

    init(callId: CallID, room: Room) {
        self.callId = callId
        self.room = room
        self.queue = DispatchQueueHandle(room.queue)
    }

    func receive(_ datagram: [UInt8], from source: TransportAddress, at time: MediaTime) {
        RoomQueueDepth.enqueued()
        queue.queue.async { [weak room, callId] in
            RoomQueueDepth.dequeued()
            room?.assumeIsolated { $0.handleDatagram(datagram, from: source, at: time, callId: callId) }
        }
    }
}

import Dispatch

/// `@unchecked Sendable`: a `DispatchQueue` is thread-safe; Swift only lacks the annotation on
/// Linux.
struct DispatchQueueHandle: @unchecked Sendable {
    let queue: DispatchQueue
    init(_ queue: DispatchQueue) { self.queue = queue }
}

/// Datagrams handed to room queues and not yet handled, across every room: a room that falls
/// behind its input shows here first (`/metrics`: `chorus_room_queue_datagrams`; the soak
/// watches it). Two relaxed atomic operations per datagram.
public enum RoomQueueDepth {
    private static let pending = Atomic<Int>(0)

    static func enqueued() { _ = pending.wrappingAdd(1, ordering: .relaxed) }
    static func dequeued() { _ = pending.wrappingSubtract(1, ordering: .relaxed) }

    /// Datagrams waiting on room queues now.
    public static var current: Int { pending.load(ordering: .relaxed) }
}
