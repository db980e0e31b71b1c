import ChorusCore
import RTCP

/// Builds transport-cc feedback bytes (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1)
/// for the tests, which then go through the real parser: a run-length chunk for every run of 7
/// or more equal symbols, two-bit status vectors otherwise; 1-byte deltas for 0…63.75 ms, signed
/// 2-byte deltas otherwise; zero padding to a 32-bit boundary.
enum TransportFeedbackEncoder {
    /// One reported packet: not received, or received `delta` 250 µs ticks after the previous
    /// received one (the first: after the reference time).
    enum Report: Equatable {
        case lost
        case received(delta: Int)
    }

    /// Encodes reports for `baseSequenceNumber`, `baseSequenceNumber + 1`, … Deltas outside the
    /// signed 16-bit range are clamped to it. `referenceTime` is taken modulo 2^24.
    static func encode(
        baseSequenceNumber: UInt16, referenceTime: Int64, feedbackPacketCount: UInt8, reports: [Report],
        senderSSRC: UInt32 = 0x1111_1111, mediaSSRC: UInt32 = 0x2222_2222
    ) -> [UInt8] {
        let symbols = reports.map(symbol)
        var fci: [UInt8] = []
        fci.append16(baseSequenceNumber)
        fci.append16(UInt16(clamping: reports.count))
        let reference = UInt32(truncatingIfNeeded: referenceTime) & 0xFF_FFFF
        fci += [UInt8(reference >> 16), UInt8((reference >> 8) & 0xFF), UInt8(reference & 0xFF), feedbackPacketCount]
        for chunk in chunks(symbols) { fci.append16(chunk) }
        for report in reports {
            guard case .received(let delta) = report else { continue }
            if (0...255).contains(delta) {
                fci.append(UInt8(delta))
            } else {
                fci.append16(UInt16(bitPattern: Int16(clamping: delta)))
            }
        }
        while fci.count % 4 != 0 { fci.append(0) }
        var packet: [UInt8] = [0x8F, 205]
        packet.append16(UInt16((12 + fci.count) / 4 - 1))  // words - 1
        packet.append32(senderSSRC)
        packet.append32(mediaSSRC)
        return packet + fci
    }

    /// Encodes arrival times (µs on the receiver's clock, nil for lost packets): the reference
    /// time is the first arrival in 64 ms units, each delta the step between the arrivals'
    /// 250 µs ticks.
    static func encode(baseSequenceNumber: UInt16, arrivals: [Int64?], feedbackPacketCount: UInt8) -> [UInt8] {
        let first = arrivals.lazy.compactMap { $0 }.first ?? 0
        let reference = floorDivide(first, 64_000)
        var previousTick = reference * 256
        let reports = arrivals.map { arrival -> Report in
            guard let arrival else { return .lost }
            let tick = floorDivide(arrival, 250)
            defer { previousTick = tick }
            return .received(delta: Int(tick - previousTick))
        }
        return encode(baseSequenceNumber: baseSequenceNumber, referenceTime: reference,
                      feedbackPacketCount: feedbackPacketCount, reports: reports)
    }

    private static func symbol(_ report: Report) -> UInt16 {
        switch report {
        case .lost: return 0
        case .received(let delta): return (0...255).contains(delta) ? 1 : 2
        }
    }

    private static func chunks(_ symbols: [UInt16]) -> [UInt16] {
        var result: [UInt16] = []
        var index = 0
        while index < symbols.count {
            var run = 1
            while index + run < symbols.count, symbols[index + run] == symbols[index], run < 8_191 { run += 1 }
            if run >= 7 {
                result.append(symbols[index] << 13 | UInt16(run))
                index += run
                continue
            }
            var chunk: UInt16 = 0xC000
            for slot in 0..<7 where index + slot < symbols.count {
                chunk |= symbols[index + slot] << UInt16(12 - 2 * slot)
            }
            result.append(chunk)
            index += 7
        }
        return result
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        value >= 0 ? value / divisor : -((-value + divisor - 1) / divisor)
    }
}

extension Array where Element == UInt8 {
    fileprivate mutating func append16(_ value: UInt16) {
        append(UInt8(value >> 8))
        append(UInt8(value & 0xFF))
    }

    fileprivate mutating func append32(_ value: UInt32) {
        append16(UInt16(value >> 16))
        append16(UInt16(value & 0xFFFF))
    }
}
