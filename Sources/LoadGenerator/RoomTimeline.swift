import ChorusCore
import Synchronization

/// When the room's burst talker started each tone burst: what probe listeners time their
/// onsets against. Shared by the participants of one room (on the generator's event loop);
/// the starts are behind a lock, so it is `Sendable` without `@unchecked` (the lock is taken
/// once per burst by the talker and once per onset heard by each probe).
final class RoomTimeline: Sendable {
    /// Every burst start of the run (a few a second; bounded for hour-long runs).
    private let burstStarts = Mutex<[MediaTime]>([])
    static let maximumBursts = 100_000

    func burstSent(at time: MediaTime) {
        burstStarts.withLock { starts in
            if starts.count < Self.maximumBursts { starts.append(time) }
        }
    }

    /// The latest burst start at or before `time`, within a second.
    func burst(before time: MediaTime) -> MediaTime? {
        burstStarts.withLock { starts in
            starts.last { $0 <= time && time.nanoseconds(since: $0) < 1_000_000_000 }
        }
    }

    /// The bursts started in `from..<until`.
    func bursts(from: MediaTime, until: MediaTime) -> [MediaTime] {
        burstStarts.withLock { starts in starts.filter { $0 >= from && $0 < until } }
    }
}
