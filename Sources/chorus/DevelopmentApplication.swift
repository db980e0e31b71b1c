import Auth
import Foundation
import Storage

/// The application `make run` works with: created on an empty database, then reused, so the
/// printed curl line keeps working across restarts of a development server.
struct DevelopmentApplication {
    static let name = "development"
    let key: String
    let secret: String
    let created: Bool

    static func ensure(_ db: any ChorusStore) async throws -> DevelopmentApplication {
        if let existing = try await db.applications().first(where: { $0.name == name }) {
            return DevelopmentApplication(key: existing.key, secret: existing.secret, created: false)
        }
        guard try await db.applicationCount() == 0 else {
            throw StorageError.conflict("the database has applications but none named \(name)")
        }
        let app = try await db.insertApplication(
            ApplicationRecord(key: ApplicationCredentials.newKey(), secret: ApplicationCredentials.newSecret(),
                              name: name, createdAt: Date()))
        return DevelopmentApplication(key: app.key, secret: app.secret, created: true)
    }

    /// The banner; with `demo`, it also points at the web client.
    func text(host: String, port: Int, demo: Bool = false) -> String {
        let shown = host == "0.0.0.0" || host == "::" ? "127.0.0.1" : host
        return """

            \(created ? "Created the development application" : "Development application"):
              key:    \(key)
              secret: \(secret)
            \(demo ? Self.webClientLine(host: host, port: port) : "")Try it (creates a room):
              curl -s -u '\(key):\(secret)' -X POST -H 'Content-Type: application/json' -d '{}' http://\(shown):\(port)/v1/rooms

            """
    }

    /// "open http://localhost:PORT/ in two browser tabs", ending in a newline. `localhost`
    /// whenever the server listens on loopback or everywhere: browsers allow camera and
    /// microphone only in a secure context, and plain http qualifies only on localhost.
    static func webClientLine(host: String, port: Int) -> String {
        let local = ["0.0.0.0", "::", "127.0.0.1", "::1", "localhost"].contains(host)
        return "Web client: open http://\(local ? "localhost" : host):\(port)/ in two browser tabs\n"
    }
}
