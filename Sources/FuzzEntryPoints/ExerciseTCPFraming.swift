import ChorusCore
import ICETCP

/// RFC 4571 deframing of a TCP media stream (ICE-TCP). The first byte picks the maximum frame
/// length (so the too-long path is reached with short inputs) and seeds how the rest of the
/// input is cut into reads. Invariants, checked on every input:
/// - the stream cut at random read boundaries, whole, and byte by byte gives the same frames
///   and fails (or not) at the same point;
/// - re-framing the frames reproduces exactly the bytes consumed (empty frames included);
/// - no more than one frame's worth of bytes is ever held, and every frame is within bounds.
public func exerciseTCPFraming(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let maximum = 1 + Int(first) * 16
    let stream = Array(bytes.dropFirst())
    var generator = SplitMix64(seed: UInt64(first) &* 0x9E37_79B9 ^ UInt64(stream.count))

    let whole = deframe(stream, maximum: maximum) { _ in stream.count }
    let pieces = deframe(stream, maximum: maximum) { remaining in 1 + Int(generator.next() % UInt64(remaining)) }
    let bytewise = deframe(stream, maximum: maximum) { _ in 1 }
    fuzzRequire(whole.frames == pieces.frames && whole.frames == bytewise.frames, "frames depend on read boundaries")
    fuzzRequire(whole.error == pieces.error && whole.error == bytewise.error, "errors depend on read boundaries")
    fuzzRequire(whole.buffered == bytewise.buffered, "buffered bytes depend on read boundaries")

    for frame in whole.frames {
        fuzzRequire(!frame.isEmpty && frame.count <= maximum, "frame of \(frame.count) bytes passed the deframer")
        consume(PacketClass(frame))
    }
    guard whole.error == nil else { return }
    var reframed: [UInt8] = Array(repeating: 0, count: 2 * whole.emptyFrames)
    for frame in whole.frames { reframed += RFC4571Deframer.frame(frame) ?? [] }
    fuzzRequire(reframed.count == stream.count - whole.buffered, "consumed bytes do not re-frame")
    if whole.emptyFrames == 0 {
        fuzzRequire(reframed[...] == stream[..<reframed.count], "re-framed bytes differ from the stream")
    }
}

private struct Deframed: Equatable {
    var frames: [[UInt8]] = []
    var error: RFC4571FramingError?
    var buffered = 0
    var emptyFrames = 0
}

/// Feeds `stream` in reads whose lengths `nextRead(remaining)` picks (1...remaining).
private func deframe(_ stream: [UInt8], maximum: Int, nextRead: (Int) -> Int) -> Deframed {
    var deframer = RFC4571Deframer(maximumFrameLength: maximum)
    var result = Deframed()
    var offset = 0
    while offset < stream.count {
        let count = min(max(1, nextRead(stream.count - offset)), stream.count - offset)
        do {
            try deframer.feed(stream[offset..<offset + count], into: &result.frames)
        } catch {
            result.error = error
            return result
        }
        fuzzRequire(deframer.bufferedBytes <= maximum + 2, "deframer holds \(deframer.bufferedBytes) bytes")
        offset += count
    }
    result.buffered = deframer.bufferedBytes
    result.emptyFrames = deframer.emptyFrames
    return result
}
