import ChorusCore

/// The last second or so of one publisher's video packets (unprotected RTP), by sequence
/// number, to answer subscribers' NACKs without asking the publisher again.
///
/// A ring of `capacity` slots indexed by sequence number: inserting is O(1) and replaces the
/// packet 1024 sequence numbers older; a lookup checks the stored sequence number and the age,
/// so a stale or wrapped entry is never returned. Driven by the room: `insert` for each packet
/// received, `packet(_:now:)` per NACKed sequence number.
public struct PacketCache: Sendable {
    struct Entry: Sendable {
        var sequenceNumber: UInt16
        var arrival: MediaTime
        var packet: [UInt8]
    }

    /// How long a packet may be retransmitted after it arrived.
    public let maximumAge: UInt64
    private var entries: [Entry?]
    private let mask: Int

    /// `capacity` is rounded up to a power of two (1024 holds a second of 8 Mbit/s video).
    public init(capacity: Int = 1_024, maximumAgeMilliseconds: UInt64 = 1_000) {
        var size = 1
        while size < max(capacity, 2) { size <<= 1 }
        entries = Array(repeating: nil, count: size)
        mask = size - 1
        maximumAge = maximumAgeMilliseconds * 1_000_000
    }

    public mutating func insert(_ packet: [UInt8], sequenceNumber: UInt16, arrival: MediaTime) {
        entries[Int(sequenceNumber) & mask] = Entry(sequenceNumber: sequenceNumber, arrival: arrival, packet: packet)
    }

    /// The cached packet with this sequence number, unless it is older than `maximumAge`.
    public func packet(_ sequenceNumber: UInt16, now: MediaTime) -> [UInt8]? {
        guard let entry = entries[Int(sequenceNumber) & mask], entry.sequenceNumber == sequenceNumber,
              now.nanoseconds(since: entry.arrival) <= maximumAge
        else { return nil }
        return entry.packet
    }
}
