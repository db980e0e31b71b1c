import Testing

@testable import LoadGenerator

/// The host's stolen CPU time, read from `/proc/stat`'s `cpu` line (proc(5): user nice system
/// idle iowait irq softirq steal guest guest_nice, in jiffies over all CPUs).
@Suite("Host steal from /proc/stat")
struct HostStealTests {
    static func stat(user: Int, idle: Int, steal: Int) -> String {
        "cpu  \(user) 20 700 \(idle) 40 0 90 \(steal) 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 1 2 3\n"
    }

    @Test func stealIsTheShareOfTheMachinesTimeBetweenSamples() throws {
        var host = HostSteal()
        let first = host.sample(HostSteal.read(Self.stat(user: 1_000, idle: 5_000, steal: 100)))
        #expect(first == nil, "first: no interval")
        // 200 jiffies pass: 100 user, 60 idle, 40 stolen → 20 %.
        let second = host.sample(HostSteal.read(Self.stat(user: 1_100, idle: 5_060, steal: 140)))
        let percent = try #require(second)
        #expect(abs(percent - 20) < 1e-9)
        // No time stolen in the next interval.
        #expect(host.sample(HostSteal.read(Self.stat(user: 1_300, idle: 5_060, steal: 140))) == 0)
    }

    @Test func guestTimeIsNotCountedTwiceAndBadTextReadsAsUnknown() {
        // guest and guest_nice (the 9th and 10th values) are already inside user and nice.
        let reading = HostSteal.read("cpu  10 0 0 80 0 0 0 10 999 999\n")
        #expect(reading?.total == 100 && reading?.steal == 10)
        #expect(HostSteal.read("cpu0 1 2 3 4 5 6 7 8\n") == nil, "only the machine's total line")
        #expect(HostSteal.read("cpu  1 2 3\n") == nil, "a kernel without steal")
        #expect(HostSteal.read(nil) == nil)
        var host = HostSteal()
        #expect(host.sample(nil) == nil)
    }

    @Test func thisMachineReportsAFigure() throws {
        // Linux has had the steal column since 2.6.11: the run's figure must not go missing here.
        #expect(HostSteal.read() != nil)
    }
}
