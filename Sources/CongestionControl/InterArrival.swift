/// The inter-departure and inter-arrival times of consecutive packet groups (draft-ietf-rmcat-gcc-02
/// §5.2 arrival-time model and §5.3 pre-filtering; libwebrtc's InterArrivalDelta).
///
/// A group is the packets sent within `groupLength` (5 ms) of its first packet; a packet that
/// arrives within 5 ms of the group's last one and sooner than its send spacing (a burst the
/// network delivered at once, within 100 ms) joins the group too. When a packet starts a new
/// group, the group before it is complete, and the deltas between the two previous groups'
/// last send times and last arrivals are reported.
///
/// Driven by `DelayBasedEstimator` with each acknowledged packet in arrival order. Defensive:
/// a packet sent before the current group is skipped (reordered); groups whose arrival order
/// went backwards three times in a row, or whose arrival spacing exceeds the spacing of the
/// feedback that reported them by 3 s (the receiver's clock jumped), reset the grouping.
struct InterArrival: Sendable {
    /// Deltas between two complete groups, ms.
    struct Deltas: Sendable, Equatable {
        var send: Double
        var arrival: Double
    }

    /// One group's first and last send and arrival times, µs.
    private struct PacketGroup: Sendable {
        var firstSendTime: Int64
        var lastSendTime: Int64
        var firstArrival: Int64
        var lastArrival: Int64
        /// When the feedback reporting the group's last packet arrived, µs on the sender's clock.
        var lastFeedbackTime: Int64
    }

    static let groupLength: Int64 = 5_000
    static let burstDeltaThreshold: Int64 = 5_000
    static let maximumBurstDuration: Int64 = 100_000
    static let arrivalTimeOffsetThreshold: Int64 = 3_000_000
    static let reorderedResetThreshold = 3

    private var current: PacketGroup?
    private var previous: PacketGroup?
    private var consecutiveReordered = 0
    /// Times the grouping started over because of clock jumps or reordering.
    private(set) var resets = 0

    /// Feeds one packet (times in µs); returns the deltas when it completed a group that has a
    /// predecessor.
    mutating func add(sendTime: Int64, arrivalTime: Int64, feedbackTime: Int64) -> Deltas? {
        guard var group = current else {
            current = PacketGroup(firstSendTime: sendTime, lastSendTime: sendTime, firstArrival: arrivalTime,
                                  lastArrival: arrivalTime, lastFeedbackTime: feedbackTime)
            return nil
        }
        if sendTime < group.firstSendTime { return nil }
        guard startsNewGroup(group, sendTime: sendTime, arrivalTime: arrivalTime) else {
            group.lastSendTime = max(group.lastSendTime, sendTime)
            group.lastArrival = arrivalTime
            group.lastFeedbackTime = feedbackTime
            current = group
            return nil
        }
        var deltas: Deltas?
        if let earlier = previous {
            // An unusable pair drops this packet and keeps the groups (or has reset them).
            guard let usable = completedDeltas(from: earlier, to: group) else { return nil }
            deltas = usable
        }
        previous = group
        current = PacketGroup(firstSendTime: sendTime, lastSendTime: sendTime, firstArrival: arrivalTime,
                              lastArrival: arrivalTime, lastFeedbackTime: feedbackTime)
        return deltas
    }

    mutating func reset() {
        current = nil
        previous = nil
        consecutiveReordered = 0
        resets += 1
    }

    private mutating func completedDeltas(from earlier: PacketGroup, to later: PacketGroup) -> Deltas? {
        let send = later.lastSendTime - earlier.lastSendTime
        let arrival = later.lastArrival - earlier.lastArrival
        let feedback = later.lastFeedbackTime - earlier.lastFeedbackTime
        if arrival - feedback >= Self.arrivalTimeOffsetThreshold {
            reset()
            return nil
        }
        if arrival < 0 {
            consecutiveReordered += 1
            if consecutiveReordered >= Self.reorderedResetThreshold { reset() }
            return nil
        }
        consecutiveReordered = 0
        return Deltas(send: Double(send) / 1_000, arrival: Double(arrival) / 1_000)
    }

    private func startsNewGroup(_ group: PacketGroup, sendTime: Int64, arrivalTime: Int64) -> Bool {
        if belongsToBurst(group, sendTime: sendTime, arrivalTime: arrivalTime) { return false }
        return sendTime - group.firstSendTime > Self.groupLength
    }

    /// A packet the network delivered together with the group's last one (pre-filtering, §5.3).
    private func belongsToBurst(_ group: PacketGroup, sendTime: Int64, arrivalTime: Int64) -> Bool {
        let arrivalDelta = arrivalTime - group.lastArrival
        let sendDelta = sendTime - group.lastSendTime
        if sendDelta == 0 { return true }
        let propagationDelta = arrivalDelta - sendDelta
        return propagationDelta < 0 && arrivalDelta <= Self.burstDeltaThreshold
            && arrivalTime - group.firstArrival < Self.maximumBurstDuration
    }
}
