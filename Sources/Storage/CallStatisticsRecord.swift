import Foundation
import GRDB

/// One statistics upload for a call, as the SDK sends it at call end: an arbitrary JSON object
/// stored verbatim, with who uploaded it and its idempotency key.
public struct CallStatisticsRecord: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "callStatistics"
    public var id: Int64?
    public var statisticsId: String
    public var callId: String
    /// "application" or "user:<userId>".
    public var uploadedBy: String
    public var idempotencyKey: String?
    /// Hex SHA-256 of the body: a retried upload with the same key must carry the same body.
    public var bodySHA256: String
    public var body: String
    public var receivedAt: Date

    public init(statisticsId: String, callId: String, uploadedBy: String, idempotencyKey: String?,
                bodySHA256: String, body: String, receivedAt: Date) {
        self.statisticsId = statisticsId
        self.callId = callId
        self.uploadedBy = uploadedBy
        self.idempotencyKey = idempotencyKey
        self.bodySHA256 = bodySHA256
        self.body = body
        self.receivedAt = receivedAt
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }
}

/// Result of storing an upload.
public enum StatisticsInsertOutcome: Sendable, Equatable {
    /// Newly committed.
    case created(CallStatisticsRecord)
    /// The same idempotency key and body were stored before: the original row.
    case replayed(CallStatisticsRecord)
    /// The idempotency key was used before with a different body.
    case keyReusedWithDifferentBody
}

extension SQLiteStore {
    /// Commits an upload (durably, before returning), honouring its idempotency key.
    public func insertStatistics(_ record: CallStatisticsRecord) async throws(StorageError)
        -> StatisticsInsertOutcome
    {
        try await write { db in
            if let key = record.idempotencyKey,
               let existing = try CallStatisticsRecord
                .filter(Column("callId") == record.callId && Column("idempotencyKey") == key)
                .fetchOne(db)
            {
                return existing.bodySHA256 == record.bodySHA256 ? .replayed(existing) : .keyReusedWithDifferentBody
            }
            var record = record
            try record.insert(db)
            return .created(record)
        }
    }

    /// Every upload for a call, oldest first.
    public func statistics(callId: String) async throws(StorageError) -> [CallStatisticsRecord] {
        try await read { db in
            try CallStatisticsRecord.filter(Column("callId") == callId).order(Column("id")).fetchAll(db)
        }
    }
}
