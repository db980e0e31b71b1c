import Foundation
import GRDB

/// Outcome of recording a user registration's sequence.
public enum SequenceOutcome: Equatable, Sendable {
    /// Stored as the new high-water mark (durably, before this returns).
    case accepted
    /// Not greater than the stored mark; carries the mark for the error message.
    case replayed(lastAccepted: String)
}

extension ChorusDatabase {
    /// Records `sequence` as the new high-water mark for (application, user) when it is strictly
    /// greater than the stored one, in one transaction so two concurrent registrations with the
    /// same sequence cannot both pass. `isGreater(new, stored)` compares canonical decimals.
    public func acceptRegistrationSequence(
        applicationId: Int64, userId: String, sequence: String, at now: Date,
        isGreater: @escaping @Sendable (String, String) -> Bool
    ) async throws(StorageError) -> SequenceOutcome {
        try await write { db in
            let stored = try String.fetchOne(
                db, sql: "SELECT lastSequence FROM userRegistration WHERE applicationId = ? AND userId = ?",
                arguments: [applicationId, userId])
            if let stored, !isGreater(sequence, stored) {
                return .replayed(lastAccepted: stored)
            }
            try db.execute(
                sql: """
                    INSERT INTO userRegistration(applicationId, userId, lastSequence, registeredAt)
                    VALUES (?, ?, ?, ?)
                    ON CONFLICT(applicationId, userId)
                    DO UPDATE SET lastSequence = excluded.lastSequence, registeredAt = excluded.registeredAt
                    """,
                arguments: [applicationId, userId, sequence, now])
            return .accepted
        }
    }
}
