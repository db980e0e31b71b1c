import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL server for tests, from Debian's `postgresql` binaries: `initdb` into
/// a temporary folder, `pg_ctl start` on a free loopback port (its unix socket in that folder
/// too), stopped and deleted at the end. PostgreSQL refuses to run as root, so under root the
/// server runs as `nobody` (`runuser`), owning its data folder.
///
/// `shared()` is one lazily started server per test process, stopped at exit; a test that stops
/// or restarts its server on purpose starts its own with `start()` and calls `stop()`.
/// Every database it creates is fresh (`createDatabase()`), so suites never see each other's rows.
public final class PostgresTestServer: Sendable {
    public static let user = "chorus"
    public static let password = "chorus-test-password"
    public static let binaries = ProcessInfo.processInfo.environment["CHORUS_PG_BIN"] ?? "/usr/lib/postgresql/15/bin"

    public let directory: URL
    public let port: Int
    var dataDirectory: URL { directory.appendingPathComponent("data") }
    var socketDirectory: URL { directory.appendingPathComponent("socket") }

    private init(directory: URL, port: Int) {
        self.directory = directory
        self.port = port
    }

    /// The process-wide server, started on first use (concurrent first callers share one start).
    public static func shared() async throws -> PostgresTestServer {
        let task = sharedServer.withLock { task in
            if let task { return task }
            let started = Task {
                let server = try await start()
                startedShared.withLock { $0 = server }
                return server
            }
            task = started
            atexit { PostgresTestServer.stopShared() }
            return started
        }
        return try await task.value
    }

    private static let sharedServer = Mutex<Task<PostgresTestServer, any Error>?>(nil)
    /// The shared server once it runs, for the exit handler (which cannot await).
    private static let startedShared = Mutex<PostgresTestServer?>(nil)

    private static func stopShared() {
        startedShared.withLock { $0 }?.stop()
    }

    /// A new server of its own (stop it with `stop()`), started off Swift's cooperative threads:
    /// initdb and pg_ctl take seconds, and blocking those threads would stall every other test.
    public static func start() async throws -> PostgresTestServer {
        try await onThread { try startBlocking() }
    }

    /// Runs blocking process work on a Dispatch thread, not on the cooperative pool.
    @discardableResult
    static func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// A new server of its own: initdb, then `pg_ctl start` on a free port (a few tries: a port
    /// found free may be taken before the server binds it).
    static func startBlocking() throws -> PostgresTestServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-pg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do {
            try initialize(directory)
            var lastError: (any Error)?
            for _ in 0..<5 {
                let server = PostgresTestServer(directory: directory, port: try freeLoopbackPort())
                do {
                    try server.startServer()
                    return server
                } catch {
                    lastError = error
                }
            }
            throw lastError ?? PostgresTestError("PostgreSQL did not start")
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// `initdb` with a password for TCP (SCRAM, as a real deployment) and trust on the socket.
    static func initialize(_ directory: URL) throws {
        let data = directory.appendingPathComponent("data"), socket = directory.appendingPathComponent("socket")
        try FileManager.default.createDirectory(at: socket, withIntermediateDirectories: true)
        let passwordFile = directory.appendingPathComponent("password")
        try Data(password.utf8).write(to: passwordFile)
        try handOver([directory, socket, passwordFile])
        try runAsServerUser("initdb", ["-D", data.path, "-U", user, "--pwfile", passwordFile.path, "-E", "UTF8",
                                       "--auth-host", "scram-sha-256", "--auth-local", "trust", "--no-sync"])
    }

    /// Starts (or restarts after `stopServer`) the server on `port`. fsync is off: these tests
    /// kill Chorus, never the machine, and PostgreSQL's own commit path is unchanged.
    public func startServer() throws {
        let options = "-c listen_addresses=127.0.0.1 -p \(port) -k \(socketDirectory.path) "
            + "-c max_connections=400 -c fsync=off -c full_page_writes=off"
        try Self.runAsServerUser("pg_ctl", ["-D", dataDirectory.path, "-l", directory.appendingPathComponent("log").path,
                                            "-w", "-t", "60", "-o", options, "start"])
    }

    /// Stops the server at once (its data stays; `startServer()` brings it back).
    public func stopServer() throws {
        try Self.runAsServerUser("pg_ctl", ["-D", dataDirectory.path, "-m", "immediate", "-w", "stop"])
    }

    /// Stops the server and deletes its folder.
    public func stop() {
        try? stopServer()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A fresh, empty database; returns its `postgres://` URL.
    public func createDatabase(prefix: String = "t") async throws -> String {
        let name = "\(prefix)_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())"
        try await Self.onThread { try self.psql("CREATE DATABASE \(name) STRATEGY FILE_COPY") }
        return url(database: name)
    }

    /// `startServer()` off the cooperative threads.
    public func restart() async throws {
        try await Self.onThread { try self.startServer() }
    }

    /// `stopServer()` off the cooperative threads.
    public func halt() async throws {
        try await Self.onThread { try self.stopServer() }
    }

    public func url(database: String) -> String {
        "postgres://\(Self.user):\(Self.password)@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    /// Runs SQL through `psql` on the server's socket (as a superuser), returning its output.
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") throws -> String {
        try Self.run(Self.binaries + "/psql", ["-h", socketDirectory.path, "-p", "\(port)", "-U", Self.user, "-d",
                                               database, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql])
    }
}
