import ChorusCore
import RTCP

/// One packet a feedback acknowledged, with both ends' times, ready for the estimators.
struct PacketFeedback: Sendable {
    /// µs on the sender's clock.
    var sendTime: Int64
    /// µs on the receiver's clock, anchored to the sender's (only differences mean anything).
    var arrivalTime: Int64
    var size: Int
    /// 0 when the packet was not part of a probe.
    var probeCluster: Int32
}

/// What one feedback message resolved.
struct FeedbackOutcome: Sendable {
    /// Packets newly reported received (with or without an arrival time).
    var received = 0
    /// Packets newly reported lost.
    var lost = 0
    /// Packets reported lost earlier and received after all.
    var recovered = 0
    /// The receiver's clock was re-anchored: arrival times before and after do not compare.
    var clockReset = false
}

/// Turns transport-cc feedback into `PacketFeedback` by matching each reported sequence number
/// with the history of sent packets (libwebrtc's TransportFeedbackAdapter). It is where hostile
/// or damaged feedback stops:
/// - a report for a packet never sent (or long gone from the history) is counted and ignored;
/// - a packet reported received twice counts once; lost then received counts as recovered;
/// - gaps in the feedback packet count are counted as lost feedback;
/// - the 24-bit reference time is unwrapped, and the receiver's clock is anchored to the
///   sender's: when the two drift more than 30 s apart (a receiver that jumps its clock or
///   sends absurd deltas) the anchor is reset and the outcome says so;
/// - a packet more than 30 s from its feedback's reference time keeps its fate but loses its
///   timing.
/// The acknowledged packets go into `packets`, a buffer reused between feedbacks, sorted by
/// arrival time.
struct TransportFeedbackAdapter: Sendable {
    /// The farthest a receiver's anchored clock, or a packet's time within one feedback, may be
    /// from where it is expected, µs.
    static let maximumClockOffset: Int64 = 30_000_000

    private(set) var packets: [PacketFeedback] = []
    private var lastFeedbackCount: UInt8?
    private var referenceUnwrapper = WrappingCounterUnwrapper(bitWidth: 24)
    /// The last feedback's unwrapped reference time (64 ms ticks) and where it sat on the
    /// sender's clock, µs.
    private var anchor: (reference: Int64, local: Int64)?

    /// Resolves `feedback`, received at `now` (µs, sender's clock), against `history`.
    mutating func resolve(
        _ feedback: TransportFeedback, history: inout SentPacketHistory, now: Int64,
        statistics: inout BandwidthEstimatorStatistics
    ) -> FeedbackOutcome {
        packets.removeAll(keepingCapacity: true)
        var outcome = FeedbackOutcome()
        countLostFeedback(feedback.feedbackPacketCount, statistics: &statistics)
        let base = anchorReference(feedback.referenceTime, now: now, outcome: &outcome)
        if outcome.clockReset { statistics.arrivalClockResets += 1 }
        guard let first = history.extended(feedback.baseSequenceNumber) else {
            statistics.unknownPacketReports += Int(feedback.packetStatusCount)
            return outcome
        }
        var sequence = first
        for result in feedback.packets {
            defer { sequence &+= 1 }
            guard let slot = history.slot(for: sequence) else {
                statistics.unknownPacketReports += 1
                continue
            }
            let offset = result.arrivalTimeMicroseconds.map { $0 - feedback.referenceTimeMicroseconds }
            apply(result.isReceived, offset: offset, base: base, to: slot, in: &history,
                  outcome: &outcome, statistics: &statistics)
        }
        sortByArrival()
        return outcome
    }

    /// Updates one packet's fate and, if it is newly received with a usable time, lists it.
    private mutating func apply(
        _ received: Bool, offset: Int64?, base: Int64, to slot: Int, in history: inout SentPacketHistory,
        outcome: inout FeedbackOutcome, statistics: inout BandwidthEstimatorStatistics
    ) {
        var packet = history[slot]
        guard received else {
            if packet.fate == .inFlight {
                packet.fate = .reportedLost
                history[slot] = packet
                outcome.lost += 1
            }
            return
        }
        if packet.fate == .received {
            statistics.duplicatePacketReports += 1
            return
        }
        if packet.fate == .reportedLost { outcome.recovered += 1 }
        packet.fate = .received
        history[slot] = packet
        outcome.received += 1
        guard let offset else { return }
        guard abs(offset) <= Self.maximumClockOffset else {
            statistics.absurdArrivalTimes += 1
            return
        }
        packets.append(PacketFeedback(
            sendTime: packet.sendTime, arrivalTime: base + offset, size: Int(packet.size),
            probeCluster: packet.probeCluster))
    }

    /// Counts the feedback packets skipped since the last one (a count that went backwards is a
    /// reordered or repeated feedback, not a loss).
    private mutating func countLostFeedback(_ count: UInt8, statistics: inout BandwidthEstimatorStatistics) {
        statistics.feedbackPackets += 1
        guard let last = lastFeedbackCount else {
            lastFeedbackCount = count
            return
        }
        let gap = count &- last &- 1
        if gap < 128 {
            statistics.feedbackPacketsLost += Int(gap)
            lastFeedbackCount = count
        }
    }

    /// Where this feedback's reference time sits on the sender's clock, µs.
    private mutating func anchorReference(_ referenceTime: Int32, now: Int64, outcome: inout FeedbackOutcome) -> Int64 {
        let wire = UInt64(UInt32(bitPattern: referenceTime) & 0xFF_FFFF)
        let reference = Int64(truncatingIfNeeded: referenceUnwrapper.unwrap(wire))
        var local = now
        if let anchor {
            local = anchor.local + (reference - anchor.reference) * TransportFeedback.referenceTimeTickMicroseconds
            if abs(local - now) > Self.maximumClockOffset {
                local = now
                outcome.clockReset = true
            }
        }
        anchor = (reference, local)
        return local
    }

    /// Sorts `packets` by arrival time; they normally come sorted, so this is one pass.
    private mutating func sortByArrival() {
        var sorted = true
        for index in packets.indices.dropFirst() where packets[index].arrivalTime < packets[index - 1].arrivalTime {
            sorted = false
            break
        }
        if !sorted {
            packets.sort { ($0.arrivalTime, $0.sendTime) < ($1.arrivalTime, $1.sendTime) }
        }
    }
}
