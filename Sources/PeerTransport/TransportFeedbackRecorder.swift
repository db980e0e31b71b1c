import ChorusCore
import RTCP

/// The receive side of transport-wide congestion control: remembers when each packet carrying
/// the peer's transport-wide sequence number arrived, and every `interval` turns what arrived
/// since the last feedback into transport-cc messages (`TransportFeedbackWriter`), which the
/// peer's own estimator (a browser's GCC) uses to set its encoders' bitrate.
///
/// Sans-IO and allocation-free per packet: arrivals live in a ring of `window` slots indexed by
/// the unwrapped sequence number. Bounded against any peer: a sequence number more than
/// `window` ahead moves the reported range forward (what fell out is not reported), one behind
/// what was already reported is late and only counted, a repeat keeps its first arrival.
public struct TransportFeedbackRecorder: Sendable {
    /// How often feedback goes out while packets arrive: libwebrtc's default (it ranges 50–250
    /// ms with the bitrate); often enough for the estimator to see queues build within a few
    /// round trips, rare enough to cost under 1 % of a 1 Mbit/s stream.
    public static let intervalNanoseconds: UInt64 = 100_000_000
    static let window = 1_024

    /// Unwrapped sequence number stored in each slot (−1: empty), and its arrival in µs.
    private var tags: [Int64]
    private var arrivals: [Int64]
    /// The highest unwrapped sequence number seen.
    private var highest: Int64?
    /// The first unwrapped sequence number not yet reported.
    private var nextToReport: Int64 = 0
    private var feedbackPacketCount: UInt8 = 0
    public private(set) var nextFeedbackAt: MediaTime?
    /// Packets that came after their sequence number had been reported (or had fallen out of the
    /// window), and repeats: counted, never reported.
    public private(set) var lateOrRepeated: UInt64 = 0
    public private(set) var messagesSent: UInt64 = 0

    public init() {
        tags = Array(repeating: -1, count: Self.window)
        arrivals = Array(repeating: 0, count: Self.window)
    }

    /// A packet with transport-wide sequence number `sequenceNumber` arrived at `now`.
    public mutating func record(_ sequenceNumber: UInt16, at now: MediaTime) {
        let unwrapped = unwrap(sequenceNumber)
        if highest == nil {
            nextToReport = unwrapped
            nextFeedbackAt = now.adding(nanoseconds: Self.intervalNanoseconds)
        }
        guard unwrapped >= nextToReport else {
            lateOrRepeated &+= 1
            return
        }
        let slot = Int(unwrapped & Int64(Self.window - 1))
        guard tags[slot] != unwrapped else {
            lateOrRepeated &+= 1
            return
        }
        tags[slot] = unwrapped
        arrivals[slot] = Int64(now.nanoseconds / 1_000)
        if unwrapped > highest ?? .min { highest = unwrapped }
        // Whatever no longer fits the ring behind the newest packet will not be reported.
        if let highest, highest - nextToReport >= Int64(Self.window) { nextToReport = highest - Int64(Self.window) + 1 }
    }

    /// The feedback messages due at `now`: none before the interval has passed or when nothing
    /// arrived since the last ones, usually one, more when many packets arrived. Each is sent
    /// alone, a reduced-size RTCP packet (RFC 5506), as browsers send them.
    public mutating func feedback(senderSSRC: SSRC, mediaSSRC: SSRC, now: MediaTime) -> [[UInt8]] {
        guard let due = nextFeedbackAt, now >= due else { return [] }
        nextFeedbackAt = now.adding(nanoseconds: Self.intervalNanoseconds)
        guard let highest, highest >= nextToReport else { return [] }
        var out: [[UInt8]] = []
        var writer: TransportFeedbackWriter?
        for unwrapped in nextToReport...highest {
            let slot = Int(unwrapped & Int64(Self.window - 1))
            guard tags[slot] == unwrapped else { continue }
            let sequenceNumber = UInt16(truncatingIfNeeded: unwrapped)
            if writer?.add(sequenceNumber: sequenceNumber, arrivalMicroseconds: arrivals[slot]) != true {
                // Each message starts where the last left off, so the numbers lost before its
                // first arrival are reported as lost (libwebrtc's receiver does the same).
                let base = writer?.nextSequenceNumber ?? UInt16(truncatingIfNeeded: nextToReport)
                if let full = writer { emit(full, senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, into: &out) }
                writer = TransportFeedbackWriter(baseSequenceNumber: base, firstReceived: sequenceNumber,
                                                 arrivalMicroseconds: arrivals[slot])
            }
        }
        if let last = writer { emit(last, senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, into: &out) }
        nextToReport = highest + 1
        return out
    }

    private mutating func emit(_ writer: TransportFeedbackWriter, senderSSRC: SSRC, mediaSSRC: SSRC,
                               into out: inout [[UInt8]]) {
        var packet: [UInt8] = []
        writer.serialize(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, feedbackPacketCount: feedbackPacketCount,
                         into: &packet)
        out.append(packet)
        feedbackPacketCount &+= 1
        messagesSent &+= 1
    }

    /// The sequence number on a 64-bit line, taking the nearer of the wraps around the highest.
    private func unwrap(_ sequenceNumber: UInt16) -> Int64 {
        guard let highest else { return Int64(sequenceNumber) }
        let step = Int16(bitPattern: sequenceNumber &- UInt16(truncatingIfNeeded: highest))
        return highest + Int64(step)
    }
}
