import Cluster
import Logging
import MediaSocket
import Rooms
@testable import ServeSettings
import Storage
import Foundation
import Testing

/// `chorus serve`'s settings without starting anything: real command lines parsed by
/// `ServeOptions`, environments as dictionaries, and made-up host facts.
@Suite("ServeConfiguration: options, environment, defaults, validation")
struct ServeConfigurationTests {
    static let host = ServeHost(descriptorLimit: 65_536, processorCount: 2, hostName: "build host")

    func configuration(_ arguments: [String] = [], _ environment: [String: String] = [:],
                       host: ServeHost = Self.host) throws -> ServeConfiguration {
        try ServeConfiguration(options: ServeOptions.parse(arguments), environment: environment, host: host)
    }

    /// The error for `arguments` and `environment`, or nil when they were accepted.
    func error(_ arguments: [String], _ environment: [String: String] = [:]) throws -> ServeConfigurationError? {
        let options = try ServeOptions.parse(arguments)
        do {
            _ = try ServeConfiguration(options: options, environment: environment, host: Self.host)
            return nil
        } catch {
            return error
        }
    }

    @Test func defaults() throws {
        let config = try configuration()
        #expect(config.logLevel == .info)
        #expect(config.http == .init(host: "0.0.0.0", port: 8080, idleTimeout: 60, maxConnections: 10_000,
                                     rateLimitPerSecond: 100))
        #expect(config.media == .init(host: nil, port: 10000, tcpPort: .sameAsUDP, publicIPs: ["127.0.0.1"],
                                      consentTimeoutSeconds: 30, roomLanes: 2, audio: AudioEncoding()))
        #expect(config.database == .sqlite(path: "./chorus.sqlite"))
        #expect(config.nodeId == "build-host" && config.advertiseUrl == "http://127.0.0.1:8080")
        #expect(config.drainSeconds == 0 && !config.devApp && !config.demo)
        #expect(config.outbound && !config.allowPrivateOutbound && config.recordingsDirectory == "recordings")
    }

    @Test func defaultsThatFollowTheHost() throws {
        // A quarter of the descriptors, at least 64; lanes one per core, at most 64.
        let small = try configuration(host: ServeHost(descriptorLimit: 1_024, processorCount: 1, hostName: "h"))
        #expect(small.http.maxConnections == 256 && small.media.roomLanes == 1)
        let tiny = try configuration(host: ServeHost(descriptorLimit: 100, processorCount: 128, hostName: ""))
        #expect(tiny.http.maxConnections == 64 && tiny.media.roomLanes == 64 && tiny.nodeId == "node")
    }

    @Test func everyOptionFallsBackToItsVariable() throws {
        let config = try configuration([], [
            "CHORUS_HTTP_HOST": "127.0.0.1", "CHORUS_HTTP_PORT": "9000", "CHORUS_MEDIA_PORT": "20000",
            "CHORUS_MEDIA_TCP_PORT": "20001", "CHORUS_MEDIA_HOST": "::1", "CHORUS_PUBLIC_IP": "192.0.2.1, 2001:db8::1",
            "CHORUS_LOG_LEVEL": "debug", "CHORUS_RATE_LIMIT": "0", "CHORUS_DRAIN_SECONDS": "5",
            "CHORUS_HTTP_IDLE_TIMEOUT": "0", "CHORUS_HTTP_MAX_CONNECTIONS": "500", "CHORUS_CONSENT_TIMEOUT": "10",
            "CHORUS_OPUS_BITRATE": "64000", "CHORUS_OPUS_COMPLEXITY": "9", "CHORUS_OPUS_MODE": "celt",
            "CHORUS_ROOM_LANES": "4", "CHORUS_NODE_ID": "n1", "CHORUS_ADVERTISE_URL": "https://n1.example.com",
            "CHORUS_DEV_APP": "1", "CHORUS_WEBHOOKS_ALLOW_PRIVATE": "1", "CHORUS_RECORDINGS_DIR": "/var/rec",
            "CHORUS_OUTBOUND": "off", "CHORUS_DB": "postgres://chorus:pw@db:5433/chorus",
        ])
        #expect(config.http == .init(host: "127.0.0.1", port: 9000, idleTimeout: nil, maxConnections: 500,
                                     rateLimitPerSecond: nil))
        #expect(config.media == .init(host: "::1", port: 20000, tcpPort: .port(20001), publicIPs: ["192.0.2.1", "2001:db8::1"],
                                      consentTimeoutSeconds: 10, roomLanes: 4,
                                      audio: AudioEncoding(bitrate: 64_000, complexity: 9, mode: .celt)))
        #expect(config.logLevel == .debug && config.drainSeconds == 5)
        #expect(config.nodeId == "n1" && config.advertiseUrl == "https://n1.example.com")
        #expect(config.devApp && !config.demo && config.allowPrivateOutbound && !config.outbound)
        #expect(config.recordingsDirectory == "/var/rec")
        guard case .postgres(let url) = config.database else { Issue.record("\(config.database)"); return }
        #expect(url.host == "db" && url.port == 5433 && url.user == "chorus")
        // The demo implies the development application; a variable of 0 leaves a flag off.
        let demo = try configuration([], ["CHORUS_DEMO": "true", "CHORUS_DEV_APP": "0", "CHORUS_MEDIA_TCP_PORT": "0"])
        #expect(demo.demo && demo.devApp && demo.media.tcpPort == .off)
    }

    @Test func optionsWinOverVariables() throws {
        let config = try configuration(
            ["--http-port", "7000", "--public-ip", "198.51.100.7", "--public-ip", "::1", "--outbound", "on",
             "--db", ":memory:", "--log-level", "error", "--demo"],
            ["CHORUS_HTTP_PORT": "9000", "CHORUS_PUBLIC_IP": "192.0.2.1", "CHORUS_OUTBOUND": "off",
             "CHORUS_DB": "/elsewhere.sqlite", "CHORUS_LOG_LEVEL": "debug", "CHORUS_DEMO": "0"])
        #expect(config.http.port == 7000 && config.media.publicIPs == ["198.51.100.7", "::1"] && config.outbound)
        #expect(config.database == .sqlite(path: ":memory:") && config.logLevel == .error && config.demo && config.devApp)
        #expect(config.advertiseUrl == "http://198.51.100.7:7000")
        let identity = config.nodeIdentity(mediaPort: 40_000)
        #expect(identity.mediaAddresses == "198.51.100.7:40000,[::1]:40000" && identity.nodeId == "build-host")
        let ipv6First = try configuration(["--public-ip", "2001:db8::5"])
        #expect(ipv6First.advertiseUrl == "http://[2001:db8::5]:8080")
    }

    /// Each check, given as an option and as a variable: the error names whichever was used.
    @Test(arguments: [
        ("http-port", "70000", "ports must be between 1 and 65535"),
        ("http-port", "-1", "ports must be between"),
        ("media-port", "65536", "ports must be between"),
        ("media-tcp-port", "70000", "the media TCP port must be between 0 (off) and 65535"),
        ("http-host", "", "must not be empty"),
        ("media-host", "", "must not be empty"),
        ("public-ip", "example.com", "public IPs must be one to eight IPv4 or IPv6 literals"),
        ("public-ip", "fe80::1%eth0", "IPv4 or IPv6 literals"),
        ("log-level", "loud", "is not one of trace, debug, info"),
        ("rate-limit", "-1", "the rate limit must be 0 (off) or more"),
        ("drain-seconds", "3601", "drain seconds must be between 0 and 3600"),
        ("http-idle-timeout", "86401", "the HTTP idle timeout must be between 0 and 86400 seconds"),
        ("http-max-connections", "0", "the HTTP connection limit must be between 1 and 1000000"),
        ("consent-timeout", "4", "the consent timeout must be between 5 and 600 seconds"),
        ("opus-bitrate", "5999", "the Opus bitrate must be 6000-510000"),
        ("opus-complexity", "11", "the Opus complexity must be 0-10"),
        ("opus-mode", "music", "is not voip or celt"),
        ("room-lanes", "65", "room lanes must be between 1 and 64"),
        ("node-id", "a b", "the node ID must be 1-64 letters"),
        ("advertise-url", "ftp://x", "the advertise URL must be an http(s) URL"),
        ("advertise-url", "http://x/?a=1", "the advertise URL must be an http(s) URL"),
        ("outbound", "maybe", "is not on or off"),
        ("recordings-dir", "", "must not be empty"),
        ("db", "mysql://x/y", "unsupported database URL scheme"),
        ("db", "postgres://db/chorus", "has no user name"),
    ])
    func eachBadValueIsRefusedByName(name: String, value: String, problem: String) throws {
        let variable = "CHORUS_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
        // `--name=value` when the value starts with "-" (it would read as an option).
        let fromOption = try error(value.hasPrefix("-") ? ["--\(name)=\(value)"] : ["--\(name)", value])
        #expect(fromOption?.setting == "--\(name)" && fromOption?.problem.contains(problem) == true, "\(String(describing: fromOption))")
        let fromVariable = try error([], [variable: value])
        #expect(fromVariable?.setting == variable && fromVariable?.problem.contains(problem) == true,
                "\(String(describing: fromVariable))")
    }

    @Test func variablesThatAreNotOfTheOptionsTypeAreRefusedNotIgnored() throws {
        let port = try error([], ["CHORUS_HTTP_PORT": "80a"])
        #expect(port == ServeConfigurationError(setting: "CHORUS_HTTP_PORT", problem: "\"80a\" is not a whole number"))
        #expect(try error([], ["CHORUS_DRAIN_SECONDS": "soon"])?.problem == "\"soon\" is not a number")
        #expect(try error([], ["CHORUS_RATE_LIMIT": "nan"])?.setting == "CHORUS_RATE_LIMIT")
        #expect(try error([], ["CHORUS_DEMO": "2"])?.setting == "CHORUS_DEMO")
        #expect(try error([], ["CHORUS_PUBLIC_IP": "192.0.2.1,,192.0.2.2"])?.setting == "CHORUS_PUBLIC_IP")
        let nine = Array(repeating: ["--public-ip", "192.0.2.1"], count: 9).flatMap { $0 }
        #expect(try error(nine)?.problem.contains("one to eight") == true)
        // Surrounding blanks in a variable are not part of its value.
        #expect(try configuration([], ["CHORUS_HTTP_PORT": " 9000 "]).http.port == 9000)
    }

    @Test func anICETCPPortThatIsAlsoTheHTTPPortIsAConflict() throws {
        // ICE-TCP follows the UDP media port's number unless told otherwise.
        let following = try error(["--http-port", "10000"])
        #expect(following?.setting == "--http-port" && following?.problem.contains("--media-port") == true)
        let explicit = try error(["--http-port", "9000", "--media-tcp-port", "9000"])
        #expect(explicit?.problem.contains("--media-tcp-port") == true)
        #expect(try error(["--http-host", "127.0.0.1", "--media-host", "0.0.0.0", "--http-port", "9000",
                           "--media-port", "9000"]) != nil)
        // Different addresses, ICE-TCP off, another TCP port, or ports picked by the kernel: no conflict.
        #expect(try error(["--http-host", "127.0.0.1", "--media-host", "127.0.0.2", "--http-port", "9000",
                           "--media-port", "9000"]) == nil)
        #expect(try error(["--http-port", "10000", "--media-tcp-port", "0"]) == nil)
        #expect(try error(["--http-port", "10000", "--media-tcp-port", "10001"]) == nil)
        #expect(try error(["--http-port", "0", "--media-port", "0"]) == nil)
    }

    @Test func theDocumentedCommandLinesAreAccepted() throws {
        // `make run`, and what the interop tests' server fixture passes.
        let run = try configuration(["--db", "./chorus.sqlite", "--demo", "--http-port", "8080"])
        #expect(run.demo && run.devApp && run.http.port == 8080)
        let interop = try configuration([
            "--db", "/tmp/t/chorus.sqlite", "--dev-app", "--http-host", "127.0.0.1", "--http-port", "0", "--rate-limit", "0",
            "--media-port", "0", "--media-host", "127.0.0.1", "--public-ip", "127.0.0.1", "--recordings-dir", "/tmp/t/rec",
            "--webhooks-allow-private", "--outbound", "off", "--node-id", "node-a", "--advertise-url", "http://127.0.0.1:1234",
        ])
        #expect(interop.http.rateLimitPerSecond == nil && interop.allowPrivateOutbound && !interop.outbound)
        #expect(interop.nodeId == "node-a" && interop.media.host == "127.0.0.1")
    }
}
