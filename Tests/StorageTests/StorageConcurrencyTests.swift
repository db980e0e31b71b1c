import ChorusCore
import Foundation
import Storage
import Testing

/// Check-and-write steps under real concurrency: many requests at once, on several stores
/// (connections, pools: what several nodes would be) over one database.
@Suite("Storage under concurrency, on SQLite and on PostgreSQL")
struct StorageConcurrencyTests {
    /// Stores over one fresh database: three for PostgreSQL (three pools, as three nodes), one
    /// for SQLite (one process owns its file).
    func stores(_ backend: StorageBackend) async throws -> [any ChorusStore] {
        let fixture = try await backend.makeFixture()
        var stores: [any ChorusStore] = []
        for _ in 0..<(backend == .postgres ? 3 : 1) { stores.append(try await fixture.open()) }
        return stores
    }

    @Test(arguments: StorageBackend.allCases)
    func exactlyOneOfFiftyParallelRegistrationsWins(_ backend: StorageBackend) async throws {
        let stores = try await stores(backend)
        let app = try await makeApp(stores[0])
        _ = try await stores[0].acceptRegistrationSequence(applicationId: app.id!, userId: "racer", sequence: "41",
                                                           at: Date())
        for sequence in ["42", "43"] {
            let outcomes = try await withThrowingTaskGroup(of: SequenceOutcome.self) { group in
                for i in 0..<50 {
                    let store = stores[i % stores.count]
                    group.addTask {
                        try await store.acceptRegistrationSequence(applicationId: app.id!, userId: "racer",
                                                                   sequence: sequence, at: Date())
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == .accepted }.count == 1)
            #expect(outcomes.filter { $0 == .replayed(lastAccepted: sequence) }.count == 49)
        }
        for store in stores { await store.close() }
    }

    @Test(arguments: StorageBackend.allCases)
    func parallelUploadsWithOneIdempotencyKeyStoreOneRow(_ backend: StorageBackend) async throws {
        let stores = try await stores(backend)
        let app = try await makeApp(stores[0])
        let call = try await stores[0].insertCall(CallRecord(
            callId: "00000000-0000-4000-8000-000000000042", applicationId: app.id!, roomId: "r", userId: "u",
            displayName: nil, joinedAt: Date()))
        let outcomes = try await withThrowingTaskGroup(of: StatisticsInsertOutcome.self) { group in
            for i in 0..<20 {
                let store = stores[i % stores.count]
                group.addTask {
                    try await store.insertStatistics(CallStatisticsRecord(
                        statisticsId: "s\(i)", callId: call.callId, uploadedBy: "application", idempotencyKey: "same",
                        bodySHA256: "h", body: "{}", receivedAt: Date()))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let created = outcomes.compactMap { if case .created(let row) = $0 { row } else { nil } }
        let replayed = outcomes.compactMap { if case .replayed(let row) = $0 { row } else { nil } }
        #expect(created.count == 1 && replayed.count == 19)
        #expect(Set(replayed.map(\.statisticsId)) == Set(created.map(\.statisticsId)))
        #expect(try await stores[0].statistics(callId: call.callId).count == 1)
        for store in stores { await store.close() }
    }

    @Test(arguments: StorageBackend.allCases)
    func concurrentFirstUsesAgreeOnOneServerSecret(_ backend: StorageBackend) async throws {
        let stores = try await stores(backend)
        let secrets = try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for i in 0..<12 {
                let store = stores[i % stores.count]
                group.addTask { try await store.serverSecret(named: "shared") { [UInt8(i), 7, 7] } }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(secrets).count == 1)
        for store in stores { await store.close() }
    }
}
