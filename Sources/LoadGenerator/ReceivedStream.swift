import ChorusCore

/// Reception figures of one RTP stream a simulated participant receives: packets, loss from
/// the extended sequence numbers (RFC 3550 A.3) and inter-arrival jitter (RFC 3550 A.8).
/// A value, updated by `received` for each packet; `interval()` returns and resets the counts
/// of the last sampling interval for the per-second charts.
struct ReceivedStream: Sendable {
    let clockRate: Double
    private var unwrapper = SequenceNumberUnwrapper()
    private(set) var first: UInt64?
    private(set) var highest: UInt64 = 0
    private(set) var received = 0
    /// Jitter in timestamp units (RFC 3550 A.8), as the RTCP field would carry it.
    private(set) var jitter = 0.0
    private var lastTransit: Double?
    private var intervalReceived = 0
    private var intervalStartExpected: UInt64 = 0

    init(clockRate: Double) {
        self.clockRate = clockRate
    }

    var expected: Int { first.map { Int(highest - $0 + 1) } ?? 0 }
    var lost: Int { max(0, expected - received) }
    var jitterMilliseconds: Double { jitter / clockRate * 1_000 }

    mutating func received(sequenceNumber: UInt16, timestamp: UInt32, arrival: MediaTime) {
        let extended = unwrapper.unwrap(sequenceNumber)
        if first == nil {
            first = extended
            highest = extended
            intervalStartExpected = 0
        }
        highest = max(highest, extended)
        received += 1
        intervalReceived += 1
        let arrivalUnits = Double(arrival.nanoseconds) / 1e9 * clockRate
        let transit = arrivalUnits - Double(timestamp)
        if let last = lastTransit {
            var delta = abs(transit - last)
            // A timestamp wrap (or a DTX gap's jump) is not jitter.
            if delta > clockRate { delta = 0 }
            jitter += (delta - jitter) / 16
        }
        lastTransit = transit
    }

    /// Packets received and expected since the last call.
    mutating func interval() -> (received: Int, expected: Int) {
        let expectedNow = expected
        let result = (intervalReceived, max(intervalReceived, expectedNow - Int(intervalStartExpected)))
        intervalReceived = 0
        intervalStartExpected = UInt64(expectedNow)
        return result
    }
}
