import Foundation
import GRDB

/// Outcome of recording a user registration's sequence.
public enum SequenceOutcome: Equatable, Sendable {
    /// Stored as the new high-water mark (durably, before this returns).
    case accepted
    /// Not greater than the stored mark; carries the mark for the error message.
    case replayed(lastAccepted: String)
}

extension SQLiteStore {
    /// Records `sequence` as the new high-water mark for (application, user) when it is strictly
    /// greater than the stored one, in one transaction on the single writer, so two concurrent
    /// registrations with the same sequence cannot both pass.
    public func acceptRegistrationSequence(
        applicationId: Int64, userId: String, sequence: String, at now: Date
    ) async throws(StorageError) -> SequenceOutcome {
        guard CanonicalDecimal.isValid(sequence) else {
            throw .conflict("sequence \(sequence.prefix(48)) is not a canonical decimal")
        }
        return try await write { db in
            let stored = try String.fetchOne(
                db, sql: "SELECT lastSequence FROM userRegistration WHERE applicationId = ? AND userId = ?",
                arguments: [applicationId, userId])
            if let stored, !CanonicalDecimal.isGreater(sequence, than: stored) {
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
