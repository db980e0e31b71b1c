import Foundation

/// What the server keeps across restarts — applications, user registrations, rooms, calls,
/// per-call statistics and the server's own secrets — behind one protocol with two
/// implementations: `SQLiteStore` (one file, the embedded default) and `PostgresStore`
/// (the `PostgresStorage` target, a shared PostgreSQL database).
///
/// Every implementation keeps the same promises:
/// - a method that returned has committed its write durably (a registration's new sequence
///   and a statistics upload are never acknowledged before that);
/// - `acceptRegistrationSequence` and `insertStatistics` are atomic check-and-write steps, so
///   concurrent callers (on any connection, from any process) cannot both pass the check;
/// - every failure is a `StorageError`: `.unavailable` when the database cannot answer (down,
///   busy, too slow), which the API turns into a 503 with `Retry-After`.
public protocol ChorusStore: ClusterStore, WebhookStore, RecordingStore, AnyObject, Sendable {
    /// Where the data lives, safe to log (a file path, or a URL without its password).
    var location: String { get }

    /// Releases connections; the store must not be used afterwards.
    func close() async

    // Applications and the server's secrets.
    func insertApplication(_ record: ApplicationRecord) async throws(StorageError) -> ApplicationRecord
    func application(key: String) async throws(StorageError) -> ApplicationRecord?
    func application(id: Int64) async throws(StorageError) -> ApplicationRecord?
    func applications() async throws(StorageError) -> [ApplicationRecord]
    func applicationCount() async throws(StorageError) -> Int
    /// The named server secret, created from `make()` on first use and stable afterwards
    /// (e.g. the access-token signing key, so tokens survive a restart). Concurrent first uses
    /// agree on one value.
    func serverSecret(named name: String, make: @escaping @Sendable () -> [UInt8]) async throws(StorageError)
        -> [UInt8]

    // Registrations.
    /// Records `sequence` (a canonical decimal: digits, no leading zero) as the new high-water
    /// mark for (application, user) when it is numerically greater than the stored one, in one
    /// atomic step: of concurrent registrations with the same sequence exactly one is accepted.
    func acceptRegistrationSequence(applicationId: Int64, userId: String, sequence: String, at now: Date)
        async throws(StorageError) -> SequenceOutcome

    // Rooms.
    /// Stores a new open room; `.conflict` when an open room with that ID exists.
    func insertRoom(_ record: RoomRecord) async throws(StorageError) -> RoomRecord
    func openRoom(applicationId: Int64, roomId: String) async throws(StorageError) -> RoomRecord?
    /// Open rooms of one application in creation order, `limit` per page.
    func openRooms(applicationId: Int64, after token: PageToken?, limit: Int) async throws(StorageError)
        -> Page<RoomRecord>
    /// Every open room of every application, for reloading the registry at start.
    func allOpenRooms() async throws(StorageError) -> [(RoomRecord, ApplicationRecord)]
    /// Saves new settings of a room that is still open; nil when it was closed meanwhile.
    func updateRoomSettings(_ record: RoomRecord) async throws(StorageError) -> RoomRecord?
    /// Marks an open room closed; returns the closed row, nil when none was open.
    func closeRoom(applicationId: Int64, roomId: String, at now: Date) async throws(StorageError) -> RoomRecord?

    // Calls.
    func insertCall(_ record: CallRecord) async throws(StorageError) -> CallRecord
    /// Saves a call's changed fields (state transitions, end cause, server statistics).
    func updateCall(_ record: CallRecord) async throws(StorageError)
    func call(callId: String) async throws(StorageError) -> CallRecord?
    /// Calls of one application matching `filter`, oldest first, `limit` per page.
    func calls(_ filter: CallFilter, after token: PageToken?, limit: Int) async throws(StorageError)
        -> Page<CallRecord>
    /// Removes a call that never started (its join was refused).
    func deleteCall(callId: String) async throws(StorageError)
    /// Applies `change` to a stored call in one transaction; false when there is no such call.
    @discardableResult
    func modifyCall(callId: String, _ change: @escaping @Sendable (inout CallRecord) -> Void)
        async throws(StorageError) -> Bool

    /// Applies the lifecycle changes of many calls in one transaction, in order (what the call
    /// recorder writes: one commit for a batch of events instead of one each). Changes to calls
    /// that do not exist are skipped.
    func recordCallChanges(_ changes: [CallChange]) async throws(StorageError)

    // Statistics.
    /// Commits an upload (durably, before returning), honouring its idempotency key.
    func insertStatistics(_ record: CallStatisticsRecord) async throws(StorageError) -> StatisticsInsertOutcome
    /// Every upload for a call, oldest first.
    func statistics(callId: String) async throws(StorageError) -> [CallStatisticsRecord]
}

/// Numeric order of canonical decimals (digits, no leading zero), as registration sequences
/// are stored: the longer one is larger, else the first differing digit decides.
public enum CanonicalDecimal {
    public static func isGreater(_ lhs: String, than rhs: String) -> Bool {
        let l = lhs.utf8.count, r = rhs.utf8.count
        if l != r { return l > r }
        return rhs.utf8.lexicographicallyPrecedes(lhs.utf8)
    }

    /// Whether `text` is a canonical decimal of at most `maxDigits` digits.
    public static func isValid(_ text: String, maxDigits: Int = 40) -> Bool {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= maxDigits,
              bytes.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return false }
        return bytes.count == 1 || bytes[0] != UInt8(ascii: "0")
    }
}
