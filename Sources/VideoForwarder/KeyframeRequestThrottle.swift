import ChorusCore

/// Throttles keyframe requests (PLI) toward one publisher: at most one per `interval`
/// (300 ms by default). A request inside the interval is not lost: it is kept pending and
/// `poll` says when to send it, so a new subscriber or a slot switch never waits for a
/// keyframe that nobody asked for.
public struct KeyframeRequestThrottle: Sendable, Equatable {
    public let interval: UInt64
    /// When the last request was sent.
    public private(set) var lastSent: MediaTime?
    public private(set) var isPending = false

    public init(intervalMilliseconds: UInt64 = 300) {
        interval = intervalMilliseconds * 1_000_000
    }

    /// Someone needs a keyframe. True: send a PLI now. False: one was sent recently; the
    /// request waits for `poll`.
    public mutating func request(now: MediaTime) -> Bool {
        if let lastSent, now.nanoseconds(since: lastSent) < interval {
            isPending = true
            return false
        }
        lastSent = now
        isPending = false
        return true
    }

    /// Called on the room's tick: true when a pending request may be sent now.
    public mutating func poll(now: MediaTime) -> Bool {
        guard isPending else { return false }
        return request(now: now)
    }

    /// A keyframe arrived: pending requests are answered.
    public mutating func keyframeReceived() {
        isPending = false
    }
}
