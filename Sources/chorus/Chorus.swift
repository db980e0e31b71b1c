import ArgumentParser
import Foundation
import Logging
import PostgresStorage
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

/// Reads `CHORUS_<NAME>` from the environment: every option falls back to one.
func environment(_ name: String) -> String? {
    ProcessInfo.processInfo.environment["CHORUS_" + name]
}

/// `--db`, shared by every command that opens the database: an SQLite file (the default), or a
/// PostgreSQL database as `postgres://user:password@host:port/dbname`.
struct DatabaseOption: ParsableArguments {
    @Option(name: .long, help: "SQLite file path, :memory:, or postgres://user:password@host:port/dbname (env CHORUS_DB, default ./chorus.sqlite).")
    var db: String?

    var text: String { db ?? environment("DB") ?? "./chorus.sqlite" }

    /// The location, or a startup error that names what is wrong with it.
    func location() throws -> StoreLocation {
        do {
            return try StoreLocation(parsing: text)
        } catch {
            throw ValidationError("--db: \(error.description)")
        }
    }

    /// Opens (and migrates) the store `--db` names.
    func open(logger: Logger = Logger(label: "chorus.storage")) async throws -> any ChorusStore {
        switch try location() {
        case .sqlite(let path): return try SQLiteStore(path: path)
        case .postgres(let url): return try await PostgresStore.connect(url, logger: logger)
        }
    }
}
