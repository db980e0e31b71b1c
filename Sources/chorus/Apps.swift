import ArgumentParser
import Auth
import Foundation
import ServeSettings
import Storage

/// `chorus apps create|list`: application management from the command line.
struct Apps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage applications (tenants with a key and a secret).",
        subcommands: [Create.self, List.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create an application and print its credentials.")
        @Option(help: "A name for the application.") var name: String
        @Flag(help: "Joins may not create rooms: rooms must be created with POST /v1/rooms first.")
        var noAutoCreateRooms = false
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let db = try await database.open()
            var record = ApplicationRecord(key: ApplicationCredentials.newKey(),
                                           secret: ApplicationCredentials.newSecret(), name: name, createdAt: Date())
            record.autoCreateRooms = !noAutoCreateRooms
            let app = try await db.insertApplication(record)
            print("name:   \(app.name)")
            print("key:    \(app.key)")
            print("secret: \(app.secret)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List applications (keys only).")
        @OptionGroup var database: DatabaseOption

        func run() async throws {
            let db = try await database.open()
            let formatter = ISO8601DateFormatter()
            for app in try await db.applications() {
                print("\(app.key)  \(formatter.string(from: app.createdAt))  \(app.name)")
            }
        }
    }
}
