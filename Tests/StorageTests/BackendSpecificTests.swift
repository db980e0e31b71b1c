import ChorusTestSupport
import Foundation
import Logging
import PostgresStorage
import Storage
import Testing

/// What only the SQLite store has: its file's journal and sync settings.
@Suite("SQLite store specifics")
struct SQLiteStoreTests {
    @Test func walAndFullSynchronousAreOn() async throws {
        let db = try SQLiteStore(path: temporaryDatabasePath())
        #expect(try await db.pragma("journal_mode") == "wal")
        #expect(try await db.pragma("synchronous") == "2") // FULL
        #expect(try await db.integrityCheck() == "ok")
    }
}

/// What only the PostgreSQL store has: session settings, migrations by several nodes, connect
/// errors, and an outage of the server under a connected store.
@Suite("PostgreSQL store specifics")
struct PostgresStoreTests {
    static var quiet: Logger {
        var logger = Logger(label: "test.postgres")
        logger.logLevel = .critical
        return logger
    }

    @Test func sessionsCommitSynchronously() async throws {
        let url = try PostgresURL(parsing: try await PostgresTestServer.shared().createDatabase())
        let store = try await PostgresStore.connect(url, logger: Self.quiet)
        #expect(try await store.setting("synchronous_commit") == "on")
        #expect(try await store.setting("no_such_setting_anywhere") == nil)
        #expect(store.location == "postgres://chorus@127.0.0.1:\(url.port)/\(url.database)")
        await store.close()
    }

    @Test func nodesStartingTogetherMigrateOnce() async throws {
        let url = try PostgresURL(parsing: try await PostgresTestServer.shared().createDatabase())
        let stores = try await withThrowingTaskGroup(of: PostgresStore.self) { group in
            for _ in 0..<4 { group.addTask { try await PostgresStore.connect(url, logger: Self.quiet) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(try await stores[0].appliedMigrations() == Schema.migrations.map(\.name))
        for store in stores { await store.close() }
    }

    @Test func connectFailuresNameTheProblem() async throws {
        let server = try await PostgresTestServer.shared()
        var url = try PostgresURL(parsing: try await server.createDatabase())
        url.password = "wrong"
        await #expect { _ = try await PostgresStore.connect(url, logger: Self.quiet) } throws: { error in
            "\(error)".contains("password authentication failed")
        }
        url.password = PostgresTestServer.password
        url.database = "no_such_database"
        await #expect { _ = try await PostgresStore.connect(url, logger: Self.quiet) } throws: { error in
            "\(error)".contains("no_such_database") && "\(error)".contains("does not exist")
        }
    }

    /// The server goes away under a connected store: operations fail fast with `.unavailable`
    /// (the API's 503), nothing hangs or crashes, and the pool recovers once the server is back.
    @Test func outageIsUnavailableThenRecovers() async throws {
        let server = try await PostgresTestServer.start()
        defer { server.stop() }
        let url = try PostgresURL(parsing: try await server.createDatabase())
        let store = try await PostgresStore.connect(url, logger: Self.quiet, operationTimeout: .seconds(3))
        _ = try await makeApp(store)
        try await server.halt()
        for _ in 0..<3 {
            let started = ContinuousClock.now
            await #expect { _ = try await store.applicationCount() } throws: { error in
                if case .unavailable = error as? StorageError { true } else { false }
            }
            #expect(ContinuousClock.now - started < .seconds(5))
        }
        try await server.restart()
        var count: Int?
        let deadline = ContinuousClock.now + .seconds(30)
        while count == nil, ContinuousClock.now < deadline {
            count = try? await store.applicationCount()
            if count == nil { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(count == 1)
        await store.close()
    }

    @Test func unreachableServerIsAStartupError() async throws {
        let url = try PostgresURL(parsing: "postgres://u:p@127.0.0.1:1/db?sslmode=disable")
        await #expect { _ = try await PostgresStore.connect(url, logger: Self.quiet) } throws: { error in
            guard case .unavailable(let reason) = error as? StorageError else { return false }
            return reason.contains("postgres://u@127.0.0.1:1/db") && !reason.contains(":p@")
        }
    }
}
