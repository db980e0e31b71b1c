import ChorusCore
import Synchronization

/// The router's handle on one participant: runs each datagram on the room's queue and in the
/// room actor synchronously (`assumeIsolated`), so packets never wait behind async hops.
///
/// While the room is small, its queue idle and its next tick not yet due (`Room.inlineUntil`),
/// the socket's reader runs an RTP, RTCP or STUN datagram itself (`queue.sync`, which
/// libdispatch runs on the calling thread). That saves the hop's wake-up of a worker thread per
/// datagram, the largest single cost of a small meeting (a video meeting of 3 × 5 made 1,250
/// context switches a second; 15 % less CPU without them). Otherwise the datagram hops
/// (`queue.async`): the reader, which serves every room, never waits behind a tick or a queue
/// with work in it (which also keeps the datagrams in order), and a DTLS handshake's signing
/// (a millisecond) stays off it. A reader that waited showed as join times of seconds and
/// late mixes in a loaded server's 125 meetings.
/// `@unchecked Sendable`: its stored properties are immutable (`room` is a weak reference read
/// only to capture it), and everything it does with the room happens on the room's queue.
final class ParticipantConnection: DatagramReceiver, @unchecked Sendable {
    let callId: CallID
    private weak var room: Room?
    private let executor: SerialQueueExecutor

    init(callId: CallID, room: Room) {
        self.callId = callId
        self.room = room
        self.executor = room.executor
    }

    func receive(_ datagram: [UInt8], from source: TransportAddress, at time: MediaTime, readerIsLight: Bool) {
        guard let room else { return }
        let callId = callId
        if readerIsLight, time.nanoseconds < room.inlineUntil.load(ordering: .relaxed), executor.isIdle,
           PacketClass(datagram) != .dtls
        {
            executor.queue.sync {
                room.assumeIsolated { $0.handleDatagram(datagram, from: source, at: time, callId: callId) }
            }
            return
        }
        RoomQueueDepth.enqueued()
        executor.async { [weak room] in
            RoomQueueDepth.dequeued()
            room?.assumeIsolated { $0.handleDatagram(datagram, from: source, at: time, callId: callId) }
        }
    }
}

import Dispatch

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
