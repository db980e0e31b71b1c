import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// CPU time and resident memory of a local process from `/proc/<pid>/stat`, sampled once a
/// second to chart the server's (and the generator's own) cost over the run. The kernel's
/// share is kept apart: on loopback a sender's system time includes delivering into the
/// receivers' sockets and waking them, work both servers pay per datagram, so it bounds how far
/// user-space savings can move a ratio.
struct ProcessUsage: Sendable {
    /// A process's CPU seconds so far (user + system), the system part, and resident memory.
    struct Reading: Sendable, Equatable {
        var cpuSeconds: Double
        var systemSeconds: Double
        var residentMB: Double
    }

    let pid: Int32
    private var lastCPUSeconds: Double?
    private var lastSystemSeconds: Double?
    private var lastAt: Date?

    init(pid: Int32) {
        self.pid = pid
    }

    /// CPU seconds (user + system), of which system, and resident MB now; nil when the
    /// process is gone.
    static func read(pid: Int32) -> Reading? {
        parse(try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8))
    }

    /// One `/proc/<pid>/stat` line (proc(5): utime and stime are fields 14 and 15, in clock
    /// ticks, rss field 24, in pages); nil when it is missing or malformed.
    static func parse(_ text: String?) -> Reading? {
        guard let text, let close = text.lastIndex(of: ")") else { return nil }
        // Fields after the command name (which may contain spaces): state is field 3.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 22, let user = Double(fields[11]), let system = Double(fields[12]),
              let pages = Double(fields[21]) else { return nil }
        let ticks = max(Double(sysconf(Int32(_SC_CLK_TCK))), 1)
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        return Reading(cpuSeconds: (user + system) / ticks, systemSeconds: system / ticks,
                       residentMB: pages * pageSize / 1_048_576)
    }

    /// Cores used since the previous sample (1.0 = one core busy), the part of them in the
    /// kernel, and resident MB.
    mutating func sample(now: Date = Date()) -> (cores: Double?, systemCores: Double?, residentMB: Double?) {
        sample(Self.read(pid: pid), now: now)
    }

    /// `sample(now:)` on a given reading.
    mutating func sample(_ reading: Reading?, now: Date) -> (cores: Double?, systemCores: Double?, residentMB: Double?) {
        guard let reading else { return (nil, nil, nil) }
        defer {
            lastCPUSeconds = reading.cpuSeconds
            lastSystemSeconds = reading.systemSeconds
            lastAt = now
        }
        guard let lastCPUSeconds, let lastSystemSeconds, let lastAt, now.timeIntervalSince(lastAt) > 0.01 else {
            return (nil, nil, reading.residentMB)
        }
        let elapsed = now.timeIntervalSince(lastAt)
        return ((reading.cpuSeconds - lastCPUSeconds) / elapsed,
                (reading.systemSeconds - lastSystemSeconds) / elapsed, reading.residentMB)
    }

    /// The local process serving `port`, found by its command line: a `chorus … serve` (or
    /// `janus`) process. Nil when there is not exactly one candidate.
    static func findServer(target: String) -> Int32? {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
        let own = getpid()
        var found: [Int32] = []
        for entry in entries {
            guard let pid = Int32(entry), pid != own,
                  let raw = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { continue }
            let arguments = raw.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            guard let executable = arguments.first?.split(separator: "/").last else { continue }
            let matches = target == "janus" ? executable == "janus"
                : executable == "chorus" && arguments.contains("serve")
            if matches { found.append(pid) }
        }
        return found.count == 1 ? found[0] : nil
    }
}
