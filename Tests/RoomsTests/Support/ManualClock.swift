import ChorusCore
import Foundation
import Rooms
import Synchronization

/// A room clock the test moves by hand: the shell's scheduling reads it (the grid's ticks, the
/// reader's inline window), so a shell test sets the time it needs instead of sleeping for it.
final class ManualClock: RoomClock {
    private let time = Mutex(MediaTime.seconds(1_000))

    func now() -> MediaTime { time.withLock { $0 } }
    func date() -> Date { Date(timeIntervalSince1970: 1_800_000_000) }

    func advance(milliseconds: UInt64) {
        time.withLock { $0 = $0.adding(milliseconds: milliseconds) }
    }
}

/// A tick source that only records its rooms: the test fires them.
final class RecordingTickSource: TickSource {
    private let receivers = Mutex<[ObjectIdentifier: any TickReceiver]>([:])
    func add(_ receiver: any TickReceiver) { receivers.withLock { $0[ObjectIdentifier(receiver)] = receiver } }
    func remove(_ receiver: any TickReceiver) { _ = receivers.withLock { $0.removeValue(forKey: ObjectIdentifier(receiver)) } }
    var all: [any TickReceiver] { receivers.withLock { Array($0.values) } }
}
