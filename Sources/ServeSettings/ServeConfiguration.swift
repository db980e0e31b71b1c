import AudioMixer
import Cluster
import Foundation
import Logging
import MediaSocket
import Rooms
import SDP
import Storage

/// Everything `chorus serve` runs with, decided and checked before anything opens: made from
/// the parsed options, the `CHORUS_*` environment (each option's fallback) and a few facts of
/// the host (`ServeHost`), so that it is a pure function that tests drive with dictionaries.
/// `Serve.run()` only wires services from it. Each invalid value is a `ServeConfigurationError`
/// that names the option or variable it came from and what is wrong.
public struct ServeConfiguration: Sendable, Equatable {
    /// The REST control plane's listener.
    public struct HTTP: Sendable, Equatable {
        public var host: String
        /// 0 picks a free port.
        public var port: Int
        /// Seconds a connection may go without a complete request; nil: never closed for that.
        public var idleTimeout: Double?
        /// Connections open at once; past it a new one is answered 503.
        public var maxConnections: Int
        /// Requests per second per client address; nil: no limit.
        public var rateLimitPerSecond: Double?
    }

    /// The media port and what rooms are made with.
    public struct Media: Sendable, Equatable {
        /// nil: `::` (IPv4 and IPv6), or `0.0.0.0` where the machine has no IPv6.
        public var host: String?
        /// The UDP port; 0 picks a free one.
        public var port: Int
        public var tcpPort: MediaSocket.TCPPort
        /// Announced in SDP candidates, the first preferred: one to eight IP literals.
        public var publicIPs: [String]
        public var consentTimeoutSeconds: Double
        public var roomLanes: Int
        public var audio: AudioEncoding
    }

    public var logLevel: Logger.Level
    public var http: HTTP
    public var media: Media
    public var database: StoreLocation
    /// This node's ID; its advertise URL is `advertiseUrl`.
    public var nodeId: String
    public var advertiseUrl: String
    /// Seconds to stay up, not ready, before stopping on SIGTERM.
    public var drainSeconds: Double
    /// Create (or reuse) the development application and print its banner.
    public var devApp: Bool
    /// The web client's `POST /demo/token` (implies `devApp`).
    public var demo: Bool
    /// Whether this node posts webhooks and starts RTP forwards (`--outbound on`).
    public var outbound: Bool
    /// Outbound destinations may be loopback, private or link-local addresses.
    public var allowPrivateOutbound: Bool
    public var recordingsDirectory: String

    public init(options: ServeOptions, environment: [String: String], host: ServeHost) throws(ServeConfigurationError) {
        let reader = SettingReader(environment: environment)
        logLevel = try Self.logLevel(options, reader)
        http = try Self.http(options, reader, host: host)
        media = try Self.media(options, reader, host: host)
        database = try Self.database(options.database, reader)
        (nodeId, advertiseUrl) = try Self.node(options, reader, host: host, http: http, media: media)
        drainSeconds = try reader.number(options.drainSeconds, "drain-seconds")?
            .checked("drain seconds must be between 0 and 3600") { (0...3600).contains($0) } ?? 0
        demo = try reader.flag(options.demo, "demo")
        devApp = try reader.flag(options.devApp, "dev-app") || demo
        allowPrivateOutbound = try reader.flag(options.webhooksAllowPrivate, "webhooks-allow-private")
        outbound = try reader.value(options.outbound, "outbound", true, expecting: "on or off") {
            $0 == "on" ? true : $0 == "off" ? false : nil
        }.value
        recordingsDirectory = try reader.text(options.recordingsDir, "recordings-dir")?
            .checked("the recordings folder must not be empty") { !$0.isEmpty } ?? "recordings"
        try Self.checkPortsDoNotCollide(http, media)
    }

    /// This node as the cluster knows it, once the media port is bound (`mediaPort`: the port
    /// actually bound, which differs from `media.port` when that is 0).
    public func nodeIdentity(mediaPort: Int) -> NodeIdentity {
        let media = self.media.publicIPs.map { Self.bracketed($0) + ":\(mediaPort)" }.joined(separator: ",")
        return NodeIdentity(nodeId: nodeId, advertiseUrl: advertiseUrl, mediaAddresses: media)
    }

    /// An IPv6 literal in brackets, as URLs and `host:port` pairs write it.
    static func bracketed(_ address: String) -> String {
        address.contains(":") ? "[\(address)]" : address
    }
}

/// The facts of the machine that some defaults follow; `current` reads them, tests make them up.
public struct ServeHost: Sendable {
    /// The open-descriptor limit after `DescriptorLimit.raise()`: the HTTP connection limit's
    /// default is a quarter of it.
    public var descriptorLimit: Int
    /// Cores: the default number of room lanes.
    public var processorCount: Int
    /// The default node ID, made valid (`NodeIdentity.nodeId(from:)`).
    public var hostName: String

    public init(descriptorLimit: Int, processorCount: Int, hostName: String) {
        self.descriptorLimit = descriptorLimit
        self.processorCount = processorCount
        self.hostName = hostName
    }

    /// This machine, with the descriptor limit the caller raised.
    public static func current(descriptorLimit: Int) -> ServeHost {
        ServeHost(descriptorLimit: descriptorLimit, processorCount: ProcessInfo.processInfo.activeProcessorCount,
                  hostName: ProcessInfo.processInfo.hostName)
    }
}
