import ChorusCore
import Synchronization

/// The router's handle on one participant: runs a read's datagrams for its room on the room's
/// queue and in the room actor synchronously (`assumeIsolated`), in one step with one batch of
/// replies, so packets never wait behind async hops.
///
/// While `RoomScheduling` allows it (the room small, its queue idle, its next tick not yet due:
/// `Room.inlineUntil`), the socket's reader runs a light read's RTP, RTCP and STUN itself (`queue.sync`, which
/// libdispatch runs on the calling thread). That saves the hop's wake-up of a worker thread,
/// the largest single cost of a small meeting (a video meeting of 3 × 5 made 1,250 context
/// switches a second; 15 % less CPU without them). Otherwise the datagrams hop, in one block
/// (`queue.async`): the reader, which serves every room, never waits behind a tick or a queue
/// with work in it (which also keeps the datagrams in order), and a DTLS handshake's signing
/// (a millisecond) stays off it. A reader that waited showed as join times of seconds and
/// late mixes in a loaded server's 125 meetings.
/// `@unchecked Sendable`: its stored properties are immutable (`room` is a weak reference read
/// only to capture it), and everything it does with the room happens on the room's queue.
final class ParticipantConnection: DatagramReceiver, @unchecked Sendable {
    let callId: CallID
    private(set) weak var room: Room?
    private let executor: SerialQueueExecutor
    /// Whether the participant sends or receives video (set by the room on its queue, read by
    /// the socket's reader): its datagrams keep the reader prompt (`ReadSchedule`).
    private let video = Atomic<Bool>(false)

    var wantsPromptReads: Bool { video.load(ordering: .relaxed) }

    func setHasVideo(_ hasVideo: Bool) { video.store(hasVideo, ordering: .relaxed) }

    init(callId: CallID, room: Room) {
        self.callId = callId
        self.room = room
        self.executor = room.executor
    }

    /// The room's executor: a read's datagrams for one room come in one call.
    var handler: ObjectIdentifier { ObjectIdentifier(executor) }

    func receive(_ datagrams: ArraySlice<ReceivedDatagram>, readerIsLight: Bool) {
        guard let room, !datagrams.isEmpty else { return }
        // Now on the room's clock, not the first datagram's arrival: a read once per tick reads
        // datagrams that came up to a tick ago.
        let handling = RoomScheduling.datagramHandling(
            readerIsLight: readerIsLight, now: room.clock.now(), inlineUntil: room.inlineUntil.load(ordering: .relaxed),
            queueIdle: executor.isIdle, carriesDTLS: datagrams.contains { PacketClass($0.datagram) == .dtls })
        if handling == .inline {
            executor.queue.sync {
                room.assumeIsolated { $0.handleDatagrams(datagrams) }
            }
            return
        }
        let batch = Array(datagrams)
        RoomQueueDepth.enqueued(batch.count)
        executor.async { [weak room] in
            RoomQueueDepth.dequeued(batch.count)
            room?.assumeIsolated { $0.handleDatagrams(batch[...]) }
        }
    }
}

import Dispatch

/// Datagrams handed to room queues and not yet handled, across every room: a room that falls
/// behind its input shows here first (`/metrics`: `chorus_room_queue_datagrams`; the soak
/// watches it). Two relaxed atomic operations per datagram.
public enum RoomQueueDepth {
    private static let pending = Atomic<Int>(0)

    static func enqueued(_ count: Int) { _ = pending.wrappingAdd(count, ordering: .relaxed) }
    static func dequeued(_ count: Int) { _ = pending.wrappingSubtract(count, ordering: .relaxed) }

    /// Datagrams waiting on room queues now.
    public static var current: Int { pending.load(ordering: .relaxed) }
}
