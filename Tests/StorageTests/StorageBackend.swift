import ChorusCore
import ChorusTestSupport
import Foundation
import Logging
import PostgresStorage
import Storage
import Testing

/// The two implementations every storage test runs against.
enum StorageBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// A fresh, empty database of this backend (a new file, or a new database on the shared
    /// throwaway PostgreSQL server).
    func makeFixture() async throws -> StoreFixture {
        switch self {
        case .sqlite: StoreFixture(backend: self, location: temporaryDatabasePath())
        case .postgres: StoreFixture(backend: self, location: try await PostgresTestServer.shared().createDatabase())
        }
    }

    /// A store on a fresh database.
    func makeStore() async throws -> any ChorusStore {
        try await makeFixture().open()
    }
}

/// One fresh database; `open()` may be called again for another store on the same data (a
/// restart, or a second node).
struct StoreFixture: Sendable {
    let backend: StorageBackend
    /// A file path or a `postgres://` URL.
    let location: String

    func open() async throws -> any ChorusStore {
        switch backend {
        case .sqlite:
            return try SQLiteStore(path: location)
        case .postgres:
            var logger = Logger(label: "test.postgres")
            logger.logLevel = .error
            return try await PostgresStore.connect(try PostgresURL(parsing: location), logger: logger)
        }
    }
}

/// A database file in a fresh temporary folder under this test process's own folder.
func temporaryDatabasePath() -> String {
    let dir = TestDatabaseFolder.current.appendingPathComponent(UUID().uuidString)
    try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir.appendingPathComponent("test.sqlite").path
}

/// Where this test process keeps its SQLite files: `<tmp>/chorus-storage-tests/<pid>`.
///
/// A store may outlive the test that opened it (a connection pool closes when its last
/// reference goes), so files cannot be deleted per test. Instead each process sweeps the
/// folders of processes that no longer run when it first needs one, so runs do not pile up
/// hundreds of databases in `/tmp`.
enum TestDatabaseFolder {
    static let current: URL = {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-storage-tests")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        for name in names {
            guard let pid = Int32(name), pid != getpid() else { continue }
            // kill(pid, 0) fails with ESRCH only when no such process exists.
            if kill(pid, 0) != 0 && errno == ESRCH {
                try? FileManager.default.removeItem(at: root.appendingPathComponent(name))
            }
        }
        return root.appendingPathComponent(String(getpid()))
    }()
}

/// An application with a key made of `byte`.
func makeApp(_ db: any ChorusStore, byte: UInt8 = 1) async throws -> ApplicationRecord {
    try await db.insertApplication(ApplicationRecord(
        key: ApplicationKey(randomBytes: Array(repeating: byte, count: 16)), secret: "c2VjcmV0c2VjcmV0c2VjcmV0",
        name: "test", createdAt: Date()))
}

func makeRoom(_ app: ApplicationRecord, _ roomId: String) -> RoomRecord {
    RoomRecord(applicationId: app.id!, roomId: roomId, maxParticipants: 10, mixedSpeakers: 3, videoSlots: 4,
               createdAt: Date())
}
