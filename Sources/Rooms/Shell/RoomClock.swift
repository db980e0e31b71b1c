import ChorusCore
import Foundation

/// Where a room's shell reads the time: the monotonic media clock its ticks and packets run on,
/// and the wall clock that event times and call records use. `SystemRoomClock` in production;
/// tests pass their own. The core never reads a clock: it is handed `now`.
public protocol RoomClock: Sendable {
    func now() -> MediaTime
    func date() -> Date
}

/// The process's clocks.
public struct SystemRoomClock: RoomClock {
    public init() {}
    public func now() -> MediaTime { .now() }
    public func date() -> Date { Date() }
}

/// Wall-clock time for a media time, from one reading of both clocks: the core turns a step's
/// `now` into the `Date` of a join or an event without reading the clock itself.
public struct WallClock: Sendable, Equatable {
    public let reference: MediaTime
    public let referenceDate: Date

    public init(reference: MediaTime, date: Date) {
        self.reference = reference
        referenceDate = date
    }

    public init(_ clock: any RoomClock) {
        self.init(reference: clock.now(), date: clock.date())
    }

    public func date(at time: MediaTime) -> Date {
        let seconds = time >= reference
            ? Double(time.nanoseconds(since: reference)) / 1e9
            : -Double(reference.nanoseconds(since: time)) / 1e9
        return referenceDate.addingTimeInterval(seconds)
    }
}
