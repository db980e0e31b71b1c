import AudioMixer
import Cluster
import Foundation
import Logging
import MediaSocket
import Rooms
import SDP
import Storage

/// Each part of the configuration, read and checked (`SettingReader`: option, then variable,
/// then default). The messages keep the words `chorus serve` has always printed.
extension ServeConfiguration {
    static let portProblem = "ports must be between 1 and 65535 (0 picks a free one)"

    static func logLevel(_ options: ServeOptions, _ reader: SettingReader) throws(ServeConfigurationError) -> Logger.Level {
        let names = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
        return try reader.value(options.logLevel, "log-level", .info, expecting: "one of \(names)") {
            Logger.Level(rawValue: $0.lowercased())
        }.value
    }

    static func http(_ options: ServeOptions, _ reader: SettingReader, host: ServeHost) throws(ServeConfigurationError) -> HTTP {
        let address = try reader.text(options.httpHost, "http-host")?
            .checked("the HTTP listen address must not be empty") { !$0.isEmpty } ?? "0.0.0.0"
        let port = try reader.integer(options.httpPort, "http-port")?.checked(portProblem) { (0...65535).contains($0) } ?? 8080
        let idle = try reader.number(options.httpIdleTimeout, "http-idle-timeout")?
            .checked("the HTTP idle timeout must be between 0 and 86400 seconds") { (0...86400).contains($0) } ?? 60
        // A quarter of the descriptors: ICE-TCP may take half, and the rest is for the media
        // socket, the database and Dispatch's own.
        let connections = try reader.integer(options.httpMaxConnections, "http-max-connections")?
            .checked("the HTTP connection limit must be between 1 and 1000000") { (1...1_000_000).contains($0) }
            ?? min(10_000, max(64, host.descriptorLimit / 4))
        let rate = try reader.number(options.rateLimit, "rate-limit")?
            .checked("the rate limit must be 0 (off) or more requests per second") { $0 >= 0 } ?? 100
        return HTTP(host: address, port: port, idleTimeout: idle > 0 ? idle : nil, maxConnections: connections,
                    rateLimitPerSecond: rate > 0 ? rate : nil)
    }

    static func media(_ options: ServeOptions, _ reader: SettingReader, host: ServeHost) throws(ServeConfigurationError) -> Media {
        let port = try reader.integer(options.mediaPort, "media-port")?.checked(portProblem) { (0...65535).contains($0) } ?? 10000
        let tcp = try reader.integer(options.mediaTcpPort, "media-tcp-port")?
            .checked("the media TCP port must be between 0 (off) and 65535") { (0...65535).contains($0) }
        let consent = try reader.number(options.consentTimeout, "consent-timeout")?
            .checked("the consent timeout must be between 5 and 600 seconds") { (5...600).contains($0) } ?? 30
        // The default follows the cores, within the range an operator may give.
        let lanes = try reader.integer(options.roomLanes, "room-lanes")?
            .checked("room lanes must be between 1 and 64") { (1...64).contains($0) } ?? min(64, max(1, host.processorCount))
        let mediaHost = try reader.text(options.mediaHost, "media-host")?
            .checked("the media listen address must not be empty") { !$0.isEmpty }
        return Media(host: mediaHost, port: port, tcpPort: tcp.map { $0 == 0 ? .off : .port($0) } ?? .sameAsUDP,
                     publicIPs: try publicIPs(options, reader), consentTimeoutSeconds: consent, roomLanes: lanes,
                     audio: try audio(options, reader))
    }

    /// `--public-ip` (repeated) or `CHORUS_PUBLIC_IP` (comma-separated): one to eight IP literals.
    static func publicIPs(_ options: ServeOptions, _ reader: SettingReader) throws(ServeConfigurationError) -> [String] {
        let given = options.publicIp.isEmpty ? nil : options.publicIp
        let setting = reader.text(nil, "public-ip").map { variable in
            Setting(value: variable.value.split(separator: ",", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }, source: variable.source)
        }
        guard let addresses = given.map({ Setting(value: $0, source: "--public-ip") }) ?? setting else { return ["127.0.0.1"] }
        if let bad = addresses.value.first(where: { !LocalParameters.isIPLiteral($0) }) {
            throw ServeConfigurationError(setting: addresses.source,
                                          problem: "public IPs must be one to eight IPv4 or IPv6 literals; \"\(bad)\" is not one")
        }
        return try addresses.checked("public IPs must be one to eight IPv4 or IPv6 literals") { (1...8).contains($0.count) }
    }

    /// The mix encoders' settings, bounded to what libopus accepts.
    static func audio(_ options: ServeOptions, _ reader: SettingReader) throws(ServeConfigurationError) -> AudioEncoding {
        let bitrate = try reader.integer(options.opusBitrate, "opus-bitrate")?
            .checked("the Opus bitrate must be 6000-510000 bit/s") { (6_000...510_000).contains($0) } ?? 32_000
        let complexity = try reader.integer(options.opusComplexity, "opus-complexity")?
            .checked("the Opus complexity must be 0-10") { (0...10).contains($0) } ?? 5
        let modes = OpusEncoder.Mode.allCases.map(\.rawValue).joined(separator: " or ")
        let mode = try reader.value(options.opusMode, "opus-mode", .voip, expecting: modes) { OpusEncoder.Mode(rawValue: $0) }
        return AudioEncoding(bitrate: bitrate, complexity: complexity, mode: mode.value)
    }

    /// `--db` or `CHORUS_DB`, parsed (nothing is opened).
    static func database(_ option: DatabaseOption, _ reader: SettingReader) throws(ServeConfigurationError) -> StoreLocation {
        let text = reader.text(option.db, "db") ?? Setting(value: "./chorus.sqlite", source: "--db")
        do {
            return try StoreLocation(parsing: text.value)
        } catch {
            throw ServeConfigurationError(setting: text.source, problem: error.description)
        }
    }

    /// The node's ID (default: the host name, made valid) and advertise URL (default: the first
    /// public IP and the HTTP port).
    static func node(_ options: ServeOptions, _ reader: SettingReader, host: ServeHost, http: HTTP,
                     media: Media) throws(ServeConfigurationError) -> (String, String) {
        let id = try (reader.text(options.nodeId, "node-id") ?? Setting(value: NodeIdentity.nodeId(from: host.hostName),
                                                                          source: "--node-id"))
            .checked("the node ID must be 1-64 letters, digits, '.', '_' or '-'") { NodeIdentity.isValidNodeId($0) }
        let fallback = "http://\(bracketed(media.publicIPs[0])):\(http.port)"
        let url = try (reader.text(options.advertiseUrl, "advertise-url") ?? Setting(value: fallback, source: "--advertise-url"))
            .checked("the advertise URL must be an http(s) URL such as http://node1.example.com:8080") { text in
                guard let parsed = URL(string: text) else { return false }
                return ["http", "https"].contains(parsed.scheme ?? "") && parsed.host != nil && parsed.query == nil
            }
        return (id, url)
    }

    /// ICE-TCP and HTTP both listen on TCP: the same port number on addresses that overlap
    /// (the same one, or either a wildcard) cannot both be bound. ICE-TCP follows the UDP
    /// media port's number unless `--media-tcp-port` says otherwise.
    static func checkPortsDoNotCollide(_ http: HTTP, _ media: Media) throws(ServeConfigurationError) {
        let tcp: Int? = switch media.tcpPort {
        case .off: nil
        case .sameAsUDP: media.port
        case .port(let port): port
        }
        guard let tcp, tcp != 0, tcp == http.port else { return }
        let wildcards: Set<String> = ["0.0.0.0", "::"]
        let mediaHost = media.host ?? "::"
        guard mediaHost == http.host || wildcards.contains(mediaHost) || wildcards.contains(http.host) else { return }
        let which = media.tcpPort == .sameAsUDP ? "--media-port (ICE-TCP takes its number unless --media-tcp-port says otherwise)"
            : "--media-tcp-port"
        throw ServeConfigurationError(setting: "--http-port", problem: "port \(tcp) is also the ICE-TCP port, from \(which); "
                                      + "choose another port, or --media-tcp-port 0 to turn ICE-TCP off")
    }
}
