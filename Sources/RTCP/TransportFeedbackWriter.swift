import ChorusCore

/// Builds one transport-cc feedback message (draft-holmer-rmcat-transport-wide-cc-extensions-01
/// §3.1) from arrivals, in sequence-number order: the receive side of transport-wide congestion
/// control, which tells a sender when each of its packets arrived so that its own estimator
/// (the browser's) can drive its encoders.
///
/// Driven by the feedback recorder: `init` with the first reported sequence number and its
/// arrival, then `add` for each later sequence number (a gap in between is reported as not
/// received); `add` refuses a packet that this message cannot carry (its delta does not fit 16
/// bits, or the message is full), and the caller starts the next message with it. `serialize`
/// encodes the status chunks (run-length where a symbol repeats, else the densest vector that
/// holds the symbols) and the deltas.
///
/// Deltas are rounded to 250 µs ticks and each arrival is measured from the previous one as
/// encoded, so rounding never accumulates (the receiver sums the deltas).
public struct TransportFeedbackWriter: Sendable {
    /// Statuses per message: a bound on its size (≤ 1,000 × 2-bit symbols, ≤ 500 delta bytes)
    /// well inside an MTU.
    public static let maximumStatusCount = 1_000
    public static let maximumReceivedCount = 250

    public let baseSequenceNumber: UInt16
    /// 24-bit signed, in 64 ms units: the first arrival rounded down.
    public let referenceTime: Int32
    /// Symbols, one per sequence number from the base.
    private(set) var symbols: [TransportFeedback.PacketStatus] = []
    private var deltas: [UInt8] = []
    private var receivedCount = 0
    /// The arrival time, in µs, that the last encoded delta leads to.
    private var lastArrival: Int64

    /// A message whose first status is `sequenceNumber`, received at `arrivalMicroseconds`.
    public init(sequenceNumber: UInt16, arrivalMicroseconds: Int64) {
        self.init(baseSequenceNumber: sequenceNumber, firstReceived: sequenceNumber, arrivalMicroseconds: arrivalMicroseconds)
    }

    /// A message from `baseSequenceNumber`, whose first received packet is `firstReceived`
    /// at `arrivalMicroseconds`: the numbers before it are reported as not received (as
    /// libwebrtc's receiver starts each feedback at the first number it has not reported, so
    /// that a loss just after the last feedback is reported too). A base more than
    /// `maximumStatusCount - 1` before `firstReceived` is moved up to it.
    public init(baseSequenceNumber: UInt16, firstReceived: UInt16, arrivalMicroseconds: Int64) {
        let lead = Int(firstReceived &- baseSequenceNumber)
        let base = lead < Self.maximumStatusCount ? baseSequenceNumber : firstReceived
        self.baseSequenceNumber = base
        let ticks = Self.floorDivide(arrivalMicroseconds, TransportFeedback.referenceTimeTickMicroseconds)
        // The field is 24 bits and wraps (every 12.4 days of uptime); receivers unwrap it.
        referenceTime = Int32(truncatingIfNeeded: (ticks << 40) >> 40)
        lastArrival = ticks * TransportFeedback.referenceTimeTickMicroseconds
        _ = add(sequenceNumber: firstReceived, arrivalMicroseconds: arrivalMicroseconds)
    }

    /// How many sequence numbers the message reports.
    public var statusCount: Int { symbols.count }

    /// The sequence number `add` expects next.
    public var nextSequenceNumber: UInt16 { baseSequenceNumber &+ UInt16(truncatingIfNeeded: symbols.count) }

    /// Reports `sequenceNumber` received at `arrivalMicroseconds`, and every sequence number
    /// between the last one added and it as not received. False, with nothing changed, when
    /// this message cannot carry it: it is not after the last one, the gap or the delta is too
    /// large, or the message is full.
    public mutating func add(sequenceNumber: UInt16, arrivalMicroseconds: Int64) -> Bool {
        let gap = Int(sequenceNumber &- nextSequenceNumber)
        guard gap < 0x8000, symbols.count + gap + 1 <= Self.maximumStatusCount,
              receivedCount < Self.maximumReceivedCount
        else { return false }
        let ticks = Self.roundDivide(arrivalMicroseconds - lastArrival, TransportFeedback.deltaTickMicroseconds)
        guard ticks >= Int64(Int16.min), ticks <= Int64(Int16.max) else { return false }
        symbols.append(contentsOf: repeatElement(.notReceived, count: gap))
        if (0...255).contains(ticks) {
            symbols.append(.receivedSmallDelta)
            deltas.append(UInt8(ticks))
        } else {
            symbols.append(.receivedLargeOrNegativeDelta)
            let value = UInt16(bitPattern: Int16(ticks))
            deltas.append(UInt8(value >> 8))
            deltas.append(UInt8(truncatingIfNeeded: value))
        }
        receivedCount += 1
        lastArrival += ticks * TransportFeedback.deltaTickMicroseconds
        return true
    }

    /// Appends the message (PT 205, FMT 15), zero-padded to a 32-bit boundary inside the FCI
    /// as libwebrtc does.
    public func serialize(senderSSRC: SSRC, mediaSSRC: SSRC, feedbackPacketCount: UInt8, into out: inout [UInt8]) {
        let chunks = Self.chunks(symbols)
        let body = 8 + chunks.count * 2 + deltas.count
        let padded = (body + 3) & ~3
        // At most 1,000 statuses: far below the 16-bit length, so this cannot throw.
        try? out.appendFeedback(
            type: .transportLayerFeedback, format: TransportFeedback.format, senderSSRC: senderSSRC,
            mediaSSRC: mediaSSRC, fciLength: padded
        ) { writer in
            writer.put16(baseSequenceNumber)
            writer.put16(UInt16(symbols.count))
            writer.put24(UInt32(bitPattern: referenceTime) & 0xFF_FFFF)
            writer.put(feedbackPacketCount)
            for chunk in chunks { writer.put16(chunk) }
            writer.put(contentsOf: deltas)
            for _ in body..<padded { writer.put(0) }
        }
    }

    /// The status chunks for `symbols` (draft §3.1.3, §3.1.4): a run-length chunk for a run of
    /// at least 7 equal symbols (or one reaching the end), a 1-bit vector of 14 when the next
    /// 14 need no large delta, else a 2-bit vector of 7. Vectors past the end are padded with
    /// "not received", which the status count tells the receiver to ignore.
    static func chunks(_ symbols: [TransportFeedback.PacketStatus]) -> [UInt16] {
        var chunks: [UInt16] = []
        var index = 0
        while index < symbols.count {
            let symbol = symbols[index]
            var run = 1
            while index + run < symbols.count, symbols[index + run] == symbol, run < 0x1FFF { run += 1 }
            if run >= 7 || index + run == symbols.count && run > 1 {
                chunks.append(UInt16(symbol.rawValue) << 13 | UInt16(run))
                index += run
                continue
            }
            let window = symbols[index..<min(index + 14, symbols.count)]
            if window.allSatisfy({ $0 == .notReceived || $0 == .receivedSmallDelta }) && window.count == 14 {
                var chunk: UInt16 = 0x8000
                for (offset, symbol) in window.enumerated() { chunk |= UInt16(symbol.rawValue) << UInt16(13 - offset) }
                chunks.append(chunk)
                index += 14
            } else {
                var chunk: UInt16 = 0xC000
                for (offset, symbol) in symbols[index..<min(index + 7, symbols.count)].enumerated() {
                    chunk |= UInt16(symbol.rawValue) << UInt16(12 - 2 * offset)
                }
                chunks.append(chunk)
                index += 7
            }
        }
        return chunks
    }

    static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        value >= 0 ? value / divisor : -((-value + divisor - 1) / divisor)
    }

    static func roundDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        floorDivide(value + divisor / 2, divisor)
    }
}
