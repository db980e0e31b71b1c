import Foundation

/// The share of the machine's CPU time its hypervisor gave to other guests ("steal", the 8th
/// value of `/proc/stat`'s `cpu` line), sampled once a second with the processes' usage.
///
/// Why: on a shared virtual machine the same build, load and server can cost a third more CPU
/// from one run to the next, and a run that fails by falling behind may have lost its time to
/// the host rather than to either program. The figure is reported beside the run's verdict; it
/// never changes the verdict.
struct HostSteal: Sendable {
    private var last: (steal: Double, total: Double)?

    /// Steal and total jiffies since boot, over all CPUs; nil where `/proc/stat` is unreadable.
    static func read(_ text: String? = try? String(contentsOfFile: "/proc/stat", encoding: .utf8))
        -> (steal: Double, total: Double)?
    {
        guard let line = text?.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
        // user nice system idle iowait irq softirq steal (guest time is already in user and nice)
        let values = line.split(separator: " ").dropFirst().prefix(8).compactMap { Double($0) }
        guard values.count == 8 else { return nil }
        return (values[7], values.reduce(0, +))
    }

    /// Percent of the machine's CPU time stolen since the previous sample; nil on the first.
    mutating func sample(_ reading: (steal: Double, total: Double)? = Self.read()) -> Double? {
        guard let reading else { return nil }
        defer { last = reading }
        guard let last, reading.total > last.total else { return nil }
        return max(0, reading.steal - last.steal) * 100 / (reading.total - last.total)
    }
}
