/// Measures what a probe cluster found (libwebrtc's ProbeBitrateEstimator): for the packets of
/// one cluster, the send rate (bytes but the last over the send interval) and the receive rate
/// (bytes but the first over the receive interval). The result is the lower of the two, or
/// 0.95 × the receive rate when the receiver got less than 90 % of what was sent (the probe
/// saturated the link). A cluster counts only once 80 % of its packets and bytes were
/// acknowledged, with both intervals positive and under 1 s and a receive/send ratio under 2.
///
/// Driven by `SendSideBandwidthEstimator` with each acknowledged probe packet and the cluster it
/// was sent for; `takeResult()` returns the last valid result once. Clusters live in a fixed
/// table of eight; one idle for more than 1 s of arrival time is forgotten.
struct ProbeBitrateEstimator: Sendable {
    static let minimumReceivedFraction = 0.8
    static let maximumInterval: Int64 = 1_000_000
    static let maximumValidRatio = 2.0
    static let minimumRatioForUnsaturatedLink = 0.9
    static let targetUtilisation = 0.95
    static let clusterLifetime: Int64 = 1_000_000
    static let tableSize = 8

    /// What one cluster's acknowledged packets add up to so far.
    private struct Aggregate: Sendable {
        var id: Int32 = 0
        var firstSend: Int64 = .max
        var lastSend: Int64 = .min
        var firstReceive: Int64 = .max
        var lastReceive: Int64 = .min
        var sizeOfLastSend = 0
        var sizeOfFirstReceive = 0
        var totalBytes = 0
        var packets = 0
    }

    private var aggregates = Array(repeating: Aggregate(), count: ProbeBitrateEstimator.tableSize)
    private var result: Double?

    /// Adds one acknowledged packet of `cluster`; returns the cluster's estimate when valid.
    @discardableResult
    mutating func add(_ packet: PacketFeedback, cluster: ProbeCluster) -> Double? {
        forgetExpired(now: packet.arrivalTime)
        let index = slot(for: packet.probeCluster)
        var aggregate = aggregates[index]
        aggregate.id = packet.probeCluster
        if packet.sendTime < aggregate.firstSend { aggregate.firstSend = packet.sendTime }
        if packet.sendTime > aggregate.lastSend {
            aggregate.lastSend = packet.sendTime
            aggregate.sizeOfLastSend = packet.size
        }
        if packet.arrivalTime < aggregate.firstReceive {
            aggregate.firstReceive = packet.arrivalTime
            aggregate.sizeOfFirstReceive = packet.size
        }
        if packet.arrivalTime > aggregate.lastReceive { aggregate.lastReceive = packet.arrivalTime }
        aggregate.totalBytes += packet.size
        aggregate.packets += 1
        aggregates[index] = aggregate
        guard let estimate = Self.estimate(aggregate, cluster: cluster) else { return nil }
        result = estimate
        return estimate
    }

    /// The last valid result since the previous call, bit/s.
    mutating func takeResult() -> Double? {
        defer { result = nil }
        return result
    }

    private static func estimate(_ aggregate: Aggregate, cluster: ProbeCluster) -> Double? {
        guard Double(aggregate.packets) >= minimumReceivedFraction * Double(cluster.minimumPackets),
            Double(aggregate.totalBytes) >= minimumReceivedFraction * Double(cluster.minimumBytes)
        else { return nil }
        let sendInterval = aggregate.lastSend - aggregate.firstSend
        let receiveInterval = aggregate.lastReceive - aggregate.firstReceive
        guard sendInterval > 0, sendInterval <= maximumInterval, receiveInterval > 0,
            receiveInterval <= maximumInterval
        else { return nil }
        let sentBits = 8 * Double(aggregate.totalBytes - aggregate.sizeOfLastSend)
        let receivedBits = 8 * Double(aggregate.totalBytes - aggregate.sizeOfFirstReceive)
        let sendRate = sentBits * 1e6 / Double(sendInterval)
        let receiveRate = receivedBits * 1e6 / Double(receiveInterval)
        guard sendRate > 0, receiveRate / sendRate <= maximumValidRatio else { return nil }
        if receiveRate < minimumRatioForUnsaturatedLink * sendRate {
            return targetUtilisation * receiveRate
        }
        return min(sendRate, receiveRate)
    }

    /// The cluster's slot, or a free (or the oldest) one for a new cluster.
    private mutating func slot(for id: Int32) -> Int {
        if let existing = aggregates.firstIndex(where: { $0.id == id && $0.packets > 0 }) { return existing }
        if let free = aggregates.firstIndex(where: { $0.packets == 0 }) { return free }
        var oldest = 0
        for index in aggregates.indices where aggregates[index].lastReceive < aggregates[oldest].lastReceive {
            oldest = index
        }
        aggregates[oldest] = Aggregate()
        return oldest
    }

    private mutating func forgetExpired(now: Int64) {
        for index in aggregates.indices where aggregates[index].packets > 0 {
            if abs(now - aggregates[index].lastReceive) > Self.clusterLifetime { aggregates[index] = Aggregate() }
        }
    }
}
