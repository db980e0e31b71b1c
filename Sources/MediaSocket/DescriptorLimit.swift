import Glibc

/// The process's limit on open descriptors (RLIMIT_NOFILE), which bounds the sockets the server
/// can hold. Running out is fatal, not merely a refused connection: Dispatch on Linux watches
/// its worker threads by opening `/proc/<tid>/stat` and kills the process when that open fails
/// ("workq: registered worker exited prematurely"), and until then neither HTTP nor the
/// database can open anything. So the server raises the limit at start, and the ICE-TCP
/// listener never takes more than half of it (`MediaTCPListener.Limits.fitting`).
public enum DescriptorLimit {
    /// The soft limit now (`Int.max` when unlimited).
    public static var current: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1_024 }
        return clamped(limit.rlim_cur)
    }

    /// Raises the soft limit to the hard one, as Go's runtime does at start: a systemd service
    /// gets 1,024 of 524,288 by default, fewer than the ICE-TCP listener's 4,096 connections.
    /// Returns the soft limit before and after (unchanged if the kernel refuses).
    @discardableResult
    public static func raise() -> (from: Int, to: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return (current, current) }
        let before = limit.rlim_cur
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return (clamped(before), current)
    }

    static func clamped(_ value: rlim_t) -> Int {
        value > rlim_t(Int.max) ? Int.max : Int(value)  // RLIM_INFINITY is all ones
    }
}
