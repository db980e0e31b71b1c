import ChorusCore

/// One packet the sender sent, as the history keeps it (24 bytes).
struct SentPacket: Sendable {
    /// What feedback has said about the packet so far.
    enum Fate: UInt8, Sendable {
        case inFlight
        case reportedLost
        case received
    }

    /// The transport-wide sequence number, unwrapped to 64 bits; 0 marks an empty slot (the
    /// unwrapper never returns 0).
    var sequence: UInt64 = 0
    /// When it was sent, µs on the sender's clock.
    var sendTime: Int64 = 0
    /// The probe cluster it belonged to, 0 for none.
    var probeCluster: Int32 = 0
    var size: UInt16 = 0
    var fate: Fate = .inFlight
}

/// The packets sent on one transport, by transport-wide sequence number, in a fixed ring: slot
/// `sequence & mask` holds the newest packet with that remainder, so recording a packet never
/// allocates and a packet too old for the ring is simply gone (its reports count as unknown).
///
/// Driven by `SendSideBandwidthEstimator`: `record` for each packet sent, `slot(for:)` for each
/// packet a feedback reports, `extended(_:)` to place a feedback's base sequence number.
struct SentPacketHistory: Sendable {
    private var slots: [SentPacket]
    private let mask: Int
    private var unwrapper = SequenceNumberUnwrapper()

    /// `capacity` must be a power of two (the configuration's `sanitized` makes it one).
    init(capacity: Int) {
        slots = Array(repeating: SentPacket(), count: capacity)
        mask = capacity - 1
    }

    /// Records a packet; `size` is clamped to 0…65,535 bytes.
    mutating func record(sequenceNumber: UInt16, size: Int, sendTime: Int64, probeCluster: Int32) {
        let sequence = unwrapper.unwrap(sequenceNumber)
        let index = Int(truncatingIfNeeded: sequence) & mask
        slots[index] = SentPacket(
            sequence: sequence, sendTime: sendTime, probeCluster: probeCluster,
            size: UInt16(clamping: size), fate: .inFlight)
    }

    /// The unwrapped form of a wire sequence number, placed nearest the newest packet sent;
    /// nil before anything was sent.
    func extended(_ sequenceNumber: UInt16) -> UInt64? {
        guard unwrapper.highest != nil else { return nil }
        return unwrapper.peek(sequenceNumber)
    }

    /// The slot holding `sequence`, nil when that packet was never sent or has been overwritten.
    func slot(for sequence: UInt64) -> Int? {
        guard sequence != 0, let highest = unwrapper.highest, sequence <= highest else { return nil }
        let index = Int(truncatingIfNeeded: sequence) & mask
        return slots[index].sequence == sequence ? index : nil
    }

    subscript(slot: Int) -> SentPacket {
        get { slots[slot] }
        set { slots[slot] = newValue }
    }
}
