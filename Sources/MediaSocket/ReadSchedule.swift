/// When the media port's reader reads: at once, or once per room tick. A sans-IO value the
/// reader thread owns: `noteRead` after each read, `nextRead` before it waits.
///
/// **Why.** A room consumes audio only on its 20 ms tick: the jitter buffer holds every packet
/// at least its minimum delay (20 ms) past its arrival. Reading each datagram the moment it
/// comes wakes the reader (and its core, from idle) once per datagram: in a room of 40 with 3
/// talkers, some 300 wake-ups a second, most of the reader's cost. Read once per tick instead,
/// a little before the rooms' timers fire, and a datagram still reaches its room before the
/// tick that plays it (it waited at most one tick, less than the buffer's minimum delay), while
/// the kernel's arrival stamp (SO_TIMESTAMPNS) keeps its arrival time exact for jitter, RTCP and
/// transport-cc. Like a network card's interrupt moderation, but on the rooms' own clock.
///
/// **When not.** Video is forwarded on arrival (a tick's wait would be added latency), so a
/// datagram for a participant with video, or a DTLS record (a handshake's flights would each
/// wait a tick), keeps the reader prompt for `promptHold`. A busy port (a read of a full
/// recvmmsg batch, or `busyPerSecond` datagrams in a second) reads at once as well: there each
/// wake-up already carries many datagrams, and a tick's worth at once would reach a big room
/// as one burst just before its tick.
struct ReadSchedule {
    /// The rooms' tick grid (`RoomCore.tickMilliseconds`): every room ticks on multiples of it
    /// of the monotonic clock.
    static let period: UInt64 = 20_000_000
    /// How long before a tick the reader reads. More than the room's inline guard (2 ms), so a
    /// small room's datagrams are still run on the reader's thread, without waking another.
    static let lead: UInt64 = 3_000_000
    /// How long one prompt datagram keeps the reader prompt.
    static let promptHold: UInt64 = 1_000_000_000
    /// Datagrams a second above which the port counts as busy (one full batch a tick).
    static let busyPerSecond = 64 * 50
    static let window: UInt64 = 1_000_000_000

    /// Until when reads stay prompt (monotonic ns).
    private(set) var promptUntil: UInt64 = 0
    private var windowStart: UInt64 = 0
    private var windowCount = 0

    /// Records one read: `count` datagrams, `prompt` when one of them needs prompt handling,
    /// `full` when it filled a recvmmsg batch.
    mutating func noteRead(count: Int, prompt: Bool, full: Bool, at now: UInt64) {
        // A new window each second (wrapping subtraction: a clock that went back starts one too).
        if now &- windowStart >= Self.window {
            windowStart = now
            windowCount = 0
        }
        windowCount += count
        if prompt || full || windowCount >= Self.busyPerSecond {
            promptUntil = max(promptUntil, now &+ Self.promptHold)
        }
    }

    /// Whether reads are once per tick at `now`.
    func isTickAligned(at now: UInt64) -> Bool { now >= promptUntil }

    /// When to read next, as seen at `now`: nil to read as soon as a datagram waits; otherwise
    /// the next read point, `lead` before a tick and later than `now`.
    func nextRead(after now: UInt64) -> UInt64? {
        isTickAligned(at: now) ? Self.readPoint(after: now) : nil
    }

    /// The first read point (`lead` before a tick of the grid) later than `now`; the reader
    /// fires the rooms' ticks there as well (`TickFiring`), right after its read.
    static func readPoint(after now: UInt64) -> UInt64 {
        let tick = (now / period + 1) * period
        return tick - lead > now ? tick - lead : tick + period - lead
    }
}
