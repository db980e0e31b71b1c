import Foundation
import NIOConcurrencyHelpers
import Storage

/// The applications last read from the store, kept to authenticate requests while the database
/// is unavailable (stale-if-error): a room's participants can still be muted, kicked or hung up
/// during a PostgreSQL restart. Every read that reaches the database refreshes the entry, so a
/// changed or deleted application takes effect as soon as the database answers again.
final class ApplicationCache: Sendable {
    /// How long an entry may stand in for the database.
    static let maximumAge: TimeInterval = 3600
    /// Bounded so that random keys cannot grow it (only found applications are kept).
    static let capacity = 10_000
    private let entries = NIOLockedValueBox<[String: (record: ApplicationRecord, readAt: Date)]>([:])

    /// The application with `key`: from the store, or from the cache when the store is
    /// unavailable and the entry is recent enough.
    func application(key: String, in store: any ChorusStore, now: Date) async throws(StorageError)
        -> ApplicationRecord?
    {
        do {
            let record = try await store.application(key: key)
            entries.withLockedValue { entries in
                if let record {
                    if entries.count >= Self.capacity { entries.removeAll() }
                    entries[key] = (record, now)
                } else {
                    entries[key] = nil
                }
            }
            return record
        } catch {
            guard case .unavailable = error,
                  let cached = entries.withLockedValue({ $0[key] }),
                  now.timeIntervalSince(cached.readAt) < Self.maximumAge
            else { throw error }
            return cached.record
        }
    }
}
