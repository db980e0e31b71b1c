import Glibc
import Logging
import Testing

@testable import MediaSocket

/// The descriptor budget of the ICE-TCP listener: a process that runs out of descriptors dies
/// (Dispatch cannot read /proc), so the server raises its soft limit at start and ICE-TCP never
/// takes more than half of it. Tests/Interop/test_tcp_half_open.py floods a whole server.
@Suite("Media socket: descriptor limit")
struct DescriptorLimitTests {
    @Test func iceTCPTakesAtMostHalfTheDescriptors() {
        // systemd's default soft limit for a service, before `chorus serve` raises it.
        #expect(MediaTCPListener.Limits.fitting(descriptorLimit: 1_024).totalLimit == 512)
        #expect(MediaTCPListener.Limits.fitting(descriptorLimit: 8_192).totalLimit == 4_096)
        #expect(MediaTCPListener.Limits.fitting(descriptorLimit: 524_288).totalLimit == 4_096)
        #expect(MediaTCPListener.Limits.fitting(descriptorLimit: Int.max).totalLimit == 4_096)
        #expect(MediaTCPListener.Limits.fitting(descriptorLimit: 1).totalLimit == 1)
        #expect(MediaTCPListener.Limits.fitting(descriptorLimit: 1_024).perHostLimit == 16)
    }

    @Test func raisingTheSoftLimitReachesTheHardLimit() throws {
        var limit = rlimit()
        try #require(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let raised = DescriptorLimit.raise()
        #expect(raised.to == DescriptorLimit.clamped(limit.rlim_max))
        #expect(raised.from <= raised.to)
        #expect(DescriptorLimit.current == raised.to)
        // Again: nothing left to raise.
        #expect(DescriptorLimit.raise().from == raised.to)
    }

    @Test func theListenerOfAMediaSocketFitsTheProcessLimit() {
        let socket = MediaSocket(host: "127.0.0.1", port: 0, tcpPort: .sameAsUDP, router: DatagramRouter(),
                                 logger: Logger(label: "test"))
        #expect(socket.tcp?.limits.totalLimit == min(4_096, DescriptorLimit.current / 2))
    }
}
