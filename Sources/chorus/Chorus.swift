import ArgumentParser

/// The `chorus` command: `serve` runs the server, `apps` manages applications, `load` drives a
/// server with simulated participants.
@main
struct Chorus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chorus",
        abstract: "Conference-room server: mixed audio and forwarded video, one UDP port.",
        subcommands: [Serve.self, Apps.self, Load.self],
        defaultSubcommand: Serve.self)
}

/// Reads `CHORUS_<NAME>` from the environment: every option falls back to one.
func environment(_ name: String) -> String? {
    ProcessInfo.processInfo.environment["CHORUS_" + name]
}

/// `--db`, shared by every command that opens the database.
struct DatabaseOption: ParsableArguments {
    @Option(name: .long, help: "SQLite file path, or :memory: (env CHORUS_DB).")
    var db: String?

    var path: String { db ?? environment("DB") ?? "./chorus.sqlite" }
}

import Foundation
