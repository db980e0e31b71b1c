import ArgumentParser
import Foundation
import Logging
import PostgresStorage
import ServeSettings
import Storage

/// The `chorus` command: `serve` runs the server, `apps` manages applications, `load` drives a
/// server with simulated participants.
@main
struct Chorus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chorus",
        abstract: "Conference-room server: mixed audio and forwarded video, one UDP port.",
        subcommands: [Serve.self, Apps.self, Nodes.self, Load.self],
        defaultSubcommand: Serve.self)
}

/// Reads `CHORUS_<NAME>` from the environment, where `chorus load`'s credentials fall back to
/// (`serve`'s settings are read by `ServeConfiguration`).
func environment(_ name: String) -> String? {
    ProcessInfo.processInfo.environment["CHORUS_" + name]
}

extension DatabaseOption {
    /// Opens (and migrates) the store `--db` (or `CHORUS_DB`) names; a location that cannot be
    /// used is a startup error that names it.
    func open(logger: Logger = Logger(label: "chorus.storage")) async throws -> any ChorusStore {
        let location: StoreLocation
        do {
            location = try self.location(environment: ProcessInfo.processInfo.environment)
        } catch {
            throw ValidationError(error.description)
        }
        return try await location.open(logger: logger)
    }
}

extension StoreLocation {
    /// Opens (and migrates) the store here: SQLite through GRDB, or a PostgreSQL pool.
    func open(logger: Logger) async throws -> any ChorusStore {
        switch self {
        case .sqlite(let path): return try SQLiteStore(path: path)
        case .postgres(let url): return try await PostgresStore.connect(url, logger: logger)
        }
    }
}
