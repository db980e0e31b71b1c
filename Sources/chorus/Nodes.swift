import ArgumentParser
import Foundation
import ServeSettings
import Storage

/// `chorus nodes list`: the cluster's nodes as the shared database has them.
struct Nodes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the nodes of a cluster.", subcommands: [List.self], defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List nodes: ID, state, seconds since the last heartbeat, load, advertise URL.")
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let db = try await database.open()
            let now = Date()
            print("node                             state     heartbeat  participants  rooms  cpu%  url")
            for node in try await db.nodes() {
                let age = String(format: "%.0fs ago", now.timeIntervalSince(node.heartbeatAt))
                print([node.nodeId.padding(32), node.state.padding(9), age.padding(10),
                       String(node.participants).padding(13), String(node.rooms).padding(6),
                       String(node.cpuPercent).padding(5), node.advertiseUrl].joined(separator: " "))
            }
            await db.close()
        }
    }
}

extension String {
    /// Left-aligned in `width` columns (longer text is kept whole).
    func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
