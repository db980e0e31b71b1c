import ChorusCore

/// The router's handle on one participant: hops each datagram onto the room's queue and into
/// the room actor synchronously (`assumeIsolated`), so packets never wait behind async hops.
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
        queue.queue.async { [weak room, callId] in
            room?.assumeIsolated { $0.handleDatagram(datagram, from: source, at: time, callId: callId) }
        }
    }
}

import Dispatch

struct DispatchQueueHandle: @unchecked Sendable {
    let queue: DispatchQueue
    init(_ queue: DispatchQueue) { self.queue = queue }
}
