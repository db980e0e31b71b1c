import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// CPU time and resident memory of a local process from `/proc/<pid>/stat`, sampled once a
/// second to chart the server's (and the generator's own) cost over the run.
struct ProcessUsage: Sendable {
    let pid: Int32
    private var lastCPUSeconds: Double?
    private var lastAt: Date?

    init(pid: Int32) {
        self.pid = pid
    }

    /// CPU seconds (user + system) and resident MB now; nil when the process is gone.
    static func read(pid: Int32) -> (cpuSeconds: Double, residentMB: Double)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // Fields after the command name (which may contain spaces): state is field 3.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 22, let user = Double(fields[11]), let system = Double(fields[12]),
              let pages = Double(fields[21]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        return ((user + system) / max(ticks, 1), pages * pageSize / 1_048_576)
    }

    /// Cores used since the previous sample (1.0 = one core busy), and resident MB.
    mutating func sample(now: Date = Date()) -> (cores: Double?, residentMB: Double?) {
        guard let reading = Self.read(pid: pid) else { return (nil, nil) }
        defer {
            lastCPUSeconds = reading.cpuSeconds
            lastAt = now
        }
        guard let lastCPUSeconds, let lastAt, now.timeIntervalSince(lastAt) > 0.01 else {
            return (nil, reading.residentMB)
        }
        return ((reading.cpuSeconds - lastCPUSeconds) / now.timeIntervalSince(lastAt), reading.residentMB)
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
