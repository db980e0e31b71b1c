import Foundation
import Testing

@testable import LoadGenerator

#if canImport(Glibc)
import Glibc
#endif

/// A process's CPU from `/proc/<pid>/stat`, with its kernel share kept apart: on loopback the
/// server's system time includes delivering into the generator's sockets, so the compare table
/// shows it beside the total.
@Suite("Process CPU, user and system")
struct ProcessUsageTests {
    static let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// A stat line (proc(5)) with `user` and `system` clock ticks and `pages` resident; the
    /// command name holds a space and a parenthesis, as a thread's may.
    static func stat(user: Int, system: Int, pages: Int = 256) -> String {
        "4242 (chorus (x) serve) S 1 4242 4242 0 -1 4194560 900 0 0 0 \(user) \(system) 0 0 20 0 9 0 "
            + "100 123456789 \(pages) 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
    }

    @Test func userAndSystemAreReadApartAndSampledAsCores() throws {
        let first = try #require(ProcessUsage.parse(Self.stat(user: 300, system: 100)))
        #expect(abs(first.cpuSeconds - 400 / Self.ticks) < 1e-9)
        #expect(abs(first.systemSeconds - 100 / Self.ticks) < 1e-9)
        var usage = ProcessUsage(pid: 4242)
        let start = Date(timeIntervalSince1970: 1_000)
        let none = usage.sample(first, now: start)
        #expect(none.cores == nil && none.systemCores == nil, "first: no interval")
        // Two seconds later: ticks/2 more of user time, ticks/2 more of system time → 0.5 cores,
        // 0.25 of them in the kernel.
        let half = Int(Self.ticks / 2)
        let second = ProcessUsage.parse(Self.stat(user: 300 + half, system: 100 + half))
        let sampled = usage.sample(second, now: start.addingTimeInterval(2))
        let cores = try #require(sampled.cores), system = try #require(sampled.systemCores)
        #expect(abs(cores - Double(2 * half) / Self.ticks / 2) < 1e-9)
        #expect(abs(system - Double(half) / Self.ticks / 2) < 1e-9)
    }

    @Test func aMalformedOrMissingLineReadsAsUnknown() {
        #expect(ProcessUsage.parse(nil) == nil)
        #expect(ProcessUsage.parse("4242 (chorus) S 1 2 3") == nil)
        #expect(ProcessUsage.parse(Self.stat(user: 1, system: 1).replacingOccurrences(of: " 100 123456789", with: " x 123456789")) != nil,
                "fields after rss are not read")
        var usage = ProcessUsage(pid: 4242)
        let sampled = usage.sample(nil, now: Date())
        #expect(sampled.cores == nil && sampled.residentMB == nil)
    }

    @Test func thisProcessHasAKernelShare() throws {
        let reading = try #require(ProcessUsage.read(pid: getpid()))
        #expect(reading.systemSeconds >= 0 && reading.systemSeconds <= reading.cpuSeconds)
        #expect(reading.residentMB > 0)
    }
}
