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

/// Packets a listener received in the measured window against the packets the stream's own
/// timing says were sent, so that a server that falls behind (continuous sequence numbers, fewer
/// packets a second) shows as loss. Expected frames come from the RTP timestamps (960 a frame);
/// a jump followed by a marker bit is a silence the server chose (RFC 3551 talk spurt), not loss.
/// The stream's clock is held against the wall clock: when its timestamps advanced slower than
/// real time (less a 60 ms allowance for the last packet's jitter), the expectation is stretched
/// to real time.
struct WindowRate: Sendable {
    static let samplesPerFrame: Int64 = 960
    static let clockRate = 48_000.0
    static let jitterAllowanceSeconds = 0.06
    private(set) var received = 0
    private var expectedFrames = 0.0
    private var lastTimestamp: UInt32?
    /// Stream time since the first packet (timestamp units), and the wall and stream times of
    /// the first and last packets.
    private var streamTime: Int64 = 0
    private var first: (wall: UInt64, stream: Int64)?
    private var last: (wall: UInt64, stream: Int64)?

    mutating func received(timestamp: UInt32, marker: Bool, at wall: MediaTime) {
        received += 1
        guard let previous = lastTimestamp else {
            lastTimestamp = timestamp
            expectedFrames = 1
            first = (wall.nanoseconds, 0)
            last = first
            return
        }
        let delta = Int64(Int32(bitPattern: timestamp &- previous))
        guard delta > 0 else { return }  // a reordered or repeated packet: counted, nothing expected
        lastTimestamp = timestamp
        streamTime += delta
        expectedFrames += marker ? 1 : Double(delta) / Double(Self.samplesPerFrame)
        last = (wall.nanoseconds, streamTime)
    }

    /// The packets the stream should have brought in the window.
    var expected: Double {
        guard let first, let last, last.stream > first.stream, last.wall > first.wall else { return expectedFrames }
        let wallSeconds = Double(last.wall - first.wall) / 1e9 - Self.jitterAllowanceSeconds
        let streamSeconds = Double(last.stream - first.stream) / Self.clockRate
        return expectedFrames * max(1, wallSeconds / streamSeconds)
    }
}
