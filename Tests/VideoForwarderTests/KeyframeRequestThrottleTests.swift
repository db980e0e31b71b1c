import ChorusCore
import Testing
import VideoForwarder

/// Proves PLIs toward a publisher are rate-limited to one per interval without losing a request.
@Suite("KeyframeRequestThrottle: at most one PLI per interval, none lost")
struct KeyframeRequestThrottleTests {
    enum Call {
        case request(UInt64)
        case poll(UInt64)
        case keyframe
    }

    /// What one call answered: whether to send a PLI now, and whether a request is pending after it.
    struct Answer: Equatable, CustomStringConvertible {
        var send: Bool
        var pending: Bool
        var description: String { "(send: \(send), pending: \(pending))" }
    }

    private static func answer(_ send: Bool, pending: Bool) -> Answer { Answer(send: send, pending: pending) }

    /// Plays `calls` (times in milliseconds) on a throttle and returns the answers.
    private func play(_ calls: [Call], on throttle: inout KeyframeRequestThrottle) -> [Answer] {
        calls.map { call in
            let send: Bool
            switch call {
            case .request(let at): send = throttle.request(now: ms(at))
            case .poll(let at): send = throttle.poll(now: ms(at))
            case .keyframe:
                throttle.keyframeReceived()
                send = false
            }
            return Answer(send: send, pending: throttle.isPending)
        }
    }

    /// The first request goes out at once; one inside 300 ms waits (pending) and `poll` sends
    /// it once 300 ms have passed since the last PLI, not before, and only once; the PLI sent
    /// by `poll` starts a new interval.
    @Test func secondRequestWaitsForTheInterval() {
        var throttle = KeyframeRequestThrottle()
        #expect(throttle.interval == 300_000_000)
        #expect(!throttle.isPending)
        let answers = play(
            [
                .request(1_000), .request(1_100), .poll(1_200), .poll(1_299), .poll(1_300), .poll(1_700),
                .request(1_500), .poll(1_599), .poll(1_600),
            ], on: &throttle)
        #expect(answers == [
            Self.answer(true, pending: false), Self.answer(false, pending: true), Self.answer(false, pending: true),
            Self.answer(false, pending: true), Self.answer(true, pending: false), Self.answer(false, pending: false),
            Self.answer(false, pending: true), Self.answer(false, pending: true), Self.answer(true, pending: false),
        ])
    }

    /// Requests spaced by the interval or more all go out immediately.
    @Test func spacedRequestsAreImmediate() {
        var throttle = KeyframeRequestThrottle(intervalMilliseconds: 100)
        #expect(throttle.interval == 100_000_000)
        let answers = play([.request(0), .request(100), .request(250), .request(350)], on: &throttle)
        #expect(answers == Array(repeating: Self.answer(true, pending: false), count: 4))
    }

    /// A key frame arriving answers the pending request: `poll` sends nothing afterwards, and
    /// the next request (the interval having passed) is immediate.
    @Test func keyframeClearsThePendingRequest() {
        var throttle = KeyframeRequestThrottle()
        let answers = play([.request(0), .request(50), .keyframe, .poll(400), .request(400)], on: &throttle)
        #expect(answers == [
            Self.answer(true, pending: false), Self.answer(false, pending: true), Self.answer(false, pending: false),
            Self.answer(false, pending: false), Self.answer(true, pending: false),
        ])
    }

    /// Many requests inside one interval still produce a single PLI when it ends.
    @Test func burstOfRequestsGivesOnePLI() {
        var throttle = KeyframeRequestThrottle()
        let calls: [Call] = [.request(0)] + stride(from: UInt64(10), to: 300, by: 10).map { .request($0) }
            + stride(from: UInt64(300), through: 1_000, by: 20).map { .poll($0) }
        let sent = play(calls, on: &throttle).filter(\.send).count
        #expect(sent == 2)
        #expect(!throttle.isPending)
    }

    /// A clock reading before the last PLI counts as inside the interval.
    @Test func earlierClockIsInsideTheInterval() {
        var throttle = KeyframeRequestThrottle()
        let answers = play([.request(10_000), .request(9_000)], on: &throttle)
        #expect(answers == [Self.answer(true, pending: false), Self.answer(false, pending: true)])
    }
}
