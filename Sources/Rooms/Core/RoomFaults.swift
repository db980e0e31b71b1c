/// Faults a test can make the rooms commit on purpose, to show that a measuring tool sees them
/// (`chorus serve` reads them from the environment only: `CHORUS_FAULT_SKIP_AUDIO_TICKS`). All
/// off by default; nothing in production sets them.
public struct RoomFaults: Sendable, Equatable {
    /// Every n-th audio tick (n ≥ 2) is skipped whole: no mix, no packet, no stream advanced.
    /// A server that falls behind this way sends fewer packets a second with sequence numbers
    /// and timestamps still continuous, which only a receiver that holds the stream to its
    /// own timing notices (`chorus load`'s packet-rate loss). 0 is off.
    public var skipEveryNthAudioTick: Int

    public init(skipEveryNthAudioTick: Int = 0) {
        self.skipEveryNthAudioTick = skipEveryNthAudioTick
    }

    /// The faults named in the environment (`CHORUS_FAULT_SKIP_AUDIO_TICKS`).
    public static func fromEnvironment(_ environment: [String: String]) -> RoomFaults {
        RoomFaults(skipEveryNthAudioTick: environment["CHORUS_FAULT_SKIP_AUDIO_TICKS"].flatMap { Int($0) } ?? 0)
    }
}
