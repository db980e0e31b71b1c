import ChorusCore
import RTCP

/// What we know about one incoming RTP stream, kept as RFC 3550 Appendix A.3 and A.8 describe,
/// so that the receiver reports we send carry real loss, jitter and LSR/DLSR values.
/// Updated per packet by `PeerTransport` on the room's queue.
struct ReceptionStatistics: Sendable {
    let ssrc: SSRC
    /// RTP clock rate of the stream (48 kHz audio, 90 kHz video), for the jitter estimate.
    let clockRate: UInt64
    private var sequence = SequenceNumberUnwrapper()
    private var baseSequence: UInt64?
    private(set) var received: UInt64 = 0
    private var expectedPrior: UInt64 = 0
    private var receivedPrior: UInt64 = 0
    /// Interarrival jitter in timestamp units, scaled by 16 (RFC 3550 A.8).
    private var jitterQ4: UInt64 = 0
    private var lastTransit: Int64?
    /// Middle 32 bits of the last SR's NTP time, and when it arrived.
    private var lastSenderReport: (compact: UInt32, at: MediaTime)?

    init(ssrc: SSRC, clockRate: UInt64) {
        self.ssrc = ssrc
        self.clockRate = clockRate
    }

    mutating func record(sequenceNumber: UInt16, timestamp: UInt32, at now: MediaTime) {
        let extended = sequence.unwrap(sequenceNumber)
        if baseSequence == nil { baseSequence = extended }
        received &+= 1
        // Arrival time in RTP units minus the RTP timestamp: its variation is the jitter.
        let arrival = Int64(truncatingIfNeeded: now.nanoseconds / 1_000 &* clockRate / 1_000_000)
        let transit = arrival &- Int64(timestamp)
        if let last = lastTransit {
            let d = min((transit &- last).magnitude, UInt64(UInt32.max))
            // J += (|D| - J) / 16, in Q4 fixed point.
            jitterQ4 = jitterQ4 &+ d &- (jitterQ4 + 8) / 16
        }
        lastTransit = transit
    }

    mutating func recordSenderReport(_ ntp: NTPTimestamp, at now: MediaTime) {
        lastSenderReport = (ntp.compact, now)
    }

    var highestSequence: UInt64? { sequence.highest }

    /// A report block for this stream, advancing the "prior" counters (RFC 3550 A.3).
    mutating func reportBlock(at now: MediaTime) -> ReportBlock? {
        guard let base = baseSequence, let highest = sequence.highest else { return nil }
        let expected = highest &- base &+ 1
        let lost = Int64(bitPattern: expected) &- Int64(bitPattern: received)
        let expectedInterval = expected &- expectedPrior
        let receivedInterval = received &- receivedPrior
        expectedPrior = expected
        receivedPrior = received
        let lostInterval = Int64(bitPattern: expectedInterval) &- Int64(bitPattern: receivedInterval)
        let fraction: UInt8 = expectedInterval == 0 || lostInterval <= 0
            ? 0 : UInt8(min(255, (lostInterval << 8) / Int64(bitPattern: expectedInterval)))
        var lsr: UInt32 = 0, dlsr: UInt32 = 0
        if let sr = lastSenderReport {
            lsr = sr.compact
            // Saturates (a stream silent for days would overflow a plain multiply).
            dlsr = CompactNTP.delay(nanoseconds: now.nanoseconds(since: sr.at))
        }
        return ReportBlock(
            ssrc: ssrc, fractionLost: fraction, cumulativeLost: Int32(clamping: lost),
            // Cycles count from the first packet's cycle (the unwrapper's origin is arbitrary).
            extendedHighestSequenceNumber: UInt32(truncatingIfNeeded: highest &- (base & ~0xFFFF)),
            jitter: UInt32(truncatingIfNeeded: jitterQ4 >> 4), lastSenderReport: lsr,
            delaySinceLastSenderReport: dlsr)
    }
}
