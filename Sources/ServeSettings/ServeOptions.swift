import ArgumentParser
import Storage

/// `chorus serve`'s command line as parsed, before anything is checked: every option is
/// optional here, because each falls back to a `CHORUS_<NAME>` variable and then to its default,
/// which only `ServeConfiguration(options:environment:host:)` decides. `Serve` takes it as an
/// option group; tests parse real command lines with `ServeOptions.parse(_:)`.
public struct ServeOptions: ParsableArguments, Sendable {
    @Option(help: "HTTP listen address (env CHORUS_HTTP_HOST, default 0.0.0.0).") public var httpHost: String?
    @Option(help: "HTTP port (env CHORUS_HTTP_PORT, default 8080; 0 picks a free one).") public var httpPort: Int?
    @Option(help: "UDP media port for every participant (env CHORUS_MEDIA_PORT, default 10000; 0 picks one).")
    public var mediaPort: Int?
    @Option(help: "ICE-TCP port (RFC 6544) for clients whose network drops UDP (env CHORUS_MEDIA_TCP_PORT, default the UDP media port's number; 0 turns ICE-TCP off).")
    public var mediaTcpPort: Int?
    @Option(help: "Media listen address, UDP and ICE-TCP (env CHORUS_MEDIA_HOST, default :: (IPv4 and IPv6), or 0.0.0.0 without IPv6).")
    public var mediaHost: String?
    @Option(help: "Address announced in SDP candidates; repeat it for several (IPv4 and IPv6): each gets its own candidates, the first is preferred (env CHORUS_PUBLIC_IP, comma-separated, default 127.0.0.1).")
    public var publicIp: [String] = []
    @Option(help: "trace, debug, info, notice, warning, error or critical (env CHORUS_LOG_LEVEL, default info).")
    public var logLevel: String?
    @Option(help: "Requests per second per client address; 0 disables (env CHORUS_RATE_LIMIT, default 100).")
    public var rateLimit: Double?
    @Option(help: "Seconds to stay up not-ready before stopping on SIGTERM (env CHORUS_DRAIN_SECONDS, default 0).")
    public var drainSeconds: Double?
    @Option(help: "Seconds an HTTP connection may sit without a complete request before it is closed; 0 = never (env CHORUS_HTTP_IDLE_TIMEOUT, default 60).")
    public var httpIdleTimeout: Double?
    @Option(help: "HTTP connections open at once; past it a new one is answered 503 (env CHORUS_HTTP_MAX_CONNECTIONS, default a quarter of the descriptor limit, at most 10000).")
    public var httpMaxConnections: Int?
    @Option(help: "Seconds a participant may go without a consent check or authenticated media from its path before its call ends with timeout (env CHORUS_CONSENT_TIMEOUT, default 30, RFC 7675).")
    public var consentTimeout: Double?
    @Option(help: "Bitrate of the room mix encoders in bit/s (env CHORUS_OPUS_BITRATE, default 32000).")
    public var opusBitrate: Int?
    @Option(help: "Opus complexity 0-10 of the mix encoders (env CHORUS_OPUS_COMPLEXITY, default 5).")
    public var opusComplexity: Int?
    @Option(help: """
        Opus coder of the mix encoders (env CHORUS_OPUS_MODE): voip (hybrid SILK+CELT, the \
        default) or celt (CELT-only low delay: about half the encode CPU, lower speech quality).
        """)
    public var opusMode: String?
    @Option(help: "Threads one big room's per-listener work (packetising, SRTP, sending) may use at once, 1-64; 1 keeps every room on its own queue (env CHORUS_ROOM_LANES, default one per core).")
    public var roomLanes: Int?
    @Option(help: "This node's ID in a cluster: 1-64 letters, digits, '.', '_' or '-' (env CHORUS_NODE_ID, default the host name).")
    public var nodeId: String?
    @Option(help: "This node's own HTTP base URL, where other nodes redirect requests for its rooms (env CHORUS_ADVERTISE_URL, default http://<first public IP>:<HTTP port>).")
    public var advertiseUrl: String?
    @Flag(help: "Create a development application on an empty database and print a working curl line (env CHORUS_DEV_APP=1).")
    public var devApp = false
    @Flag(help: "Let the web client at / get tokens from POST /demo/token; development only (implies --dev-app; env CHORUS_DEMO=1).")
    public var demo = false
    @Flag(help: "Allow webhook endpoints on loopback, private and link-local addresses; tests and trusted networks only (env CHORUS_WEBHOOKS_ALLOW_PRIVATE=1).")
    public var webhooksAllowPrivate = false
    @Option(help: "Folder for recordings, one Ogg Opus file per recording under <application>/<room>/ (env CHORUS_RECORDINGS_DIR, default ./recordings).")
    public var recordingsDir: String?
    @Option(help: "on: this node sends what applications ask for (it posts the shared webhook outbox, and starts RTP forwards); off: it sends nothing outbound, writing webhook events only and refusing forwards, e.g. for API contract tests (env CHORUS_OUTBOUND, default on).")
    public var outbound: String?
    @OptionGroup public var database: DatabaseOption

    public init() {}
}

/// `--db`, shared by every command that opens the database: an SQLite file (the default), or a
/// PostgreSQL database as `postgres://user:password@host:port/dbname`. Only parsed here; the
/// executable opens it.
public struct DatabaseOption: ParsableArguments, Sendable {
    @Option(name: .long, help: "SQLite file path, :memory:, or postgres://user:password@host:port/dbname (env CHORUS_DB, default ./chorus.sqlite).")
    public var db: String?

    public init() {}
}

extension DatabaseOption {
    /// Where `--db` (or `CHORUS_DB`, or the default `./chorus.sqlite`) points; nothing is opened.
    public func location(environment: [String: String]) throws(ServeConfigurationError) -> StoreLocation {
        try ServeConfiguration.database(self, SettingReader(environment: environment))
    }
}
