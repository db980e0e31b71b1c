import ChorusCore

extension MediaTime {
    /// Simulated time in seconds since the test's origin.
    static func at(_ seconds: Double) -> MediaTime { MediaTime(nanoseconds: UInt64(seconds * 1e9)) }
}

