import ChorusCore
import RTP
import Testing
import VideoForwarder

/// Proves the key frame test a slot switches on: VP8 P bit on a frame start, H.264 IDR/SPS
/// directly, in a STAP-A or at an FU-A start, and no trap or false positive on malformed input.
@Suite("KeyframeDetector: does a video payload start a key frame (VP8, H.264)")
struct KeyframeDetectorTests {
    private func vp8(_ payload: [UInt8]) -> Bool {
        KeyframeDetector.isKeyframeStart(
            codec: .vp8, payload: payload[...], vp8: try? VP8PayloadDescriptor(parsing: payload))
    }

    private func h264(_ payload: [UInt8]) -> Bool {
        KeyframeDetector.isKeyframeStart(codec: .h264, payload: payload[...], vp8: nil)
    }

    /// VP8: only the first packet (S=1, PID=0) of a frame whose payload header has P=0.
    @Test func vp8KeyFrameVersusInterFrame() {
        #expect(vp8(TestVP8Payload(kind: .keyframe, pictureID: 5, tl0: 1, keyIndex: 2).bytes))
        #expect(!vp8(TestVP8Payload(kind: .interframe, pictureID: 5, tl0: 1, keyIndex: 2).bytes))
        #expect(!vp8(TestVP8Payload(kind: .continuation, pictureID: 5, tl0: 1, keyIndex: 2).bytes))
        // Minimal descriptors: S only, then the frame tag's P bit.
        #expect(vp8([0x10, 0x50, 0x00, 0x00]))
        #expect(!vp8([0x10, 0x51, 0x00, 0x00]))
        // Start of partition 1, not of the frame.
        #expect(!vp8([0x11, 0x50, 0x00]))
    }

    /// VP8 without a parsed descriptor (absent or malformed) is never a key frame, and the
    /// payload is read relative to a slice's own start.
    @Test func vp8WithoutDescriptorOrInASlice() {
        #expect(!KeyframeDetector.isKeyframeStart(codec: .vp8, payload: [0x10, 0x50][...], vp8: nil))
        #expect(!vp8([]))
        #expect(!vp8([0x90]))  // X set, extension byte missing
        let packet: [UInt8] = [0xFF, 0xFF, 0x10, 0x50, 0x00]
        let payload = packet[2...]
        let descriptor = try? VP8PayloadDescriptor(parsing: payload)
        #expect(KeyframeDetector.isKeyframeStart(codec: .vp8, payload: payload, vp8: descriptor))
    }

    /// H.264 single NAL units: IDR (5) and SPS (7) start a key frame; a non-IDR slice (1),
    /// PPS (8), SEI (6) and the reserved types do not. NRI bits do not matter.
    @Test(arguments: [
        ([UInt8(0x65), 0x88, 0x84], true), ([0x25, 0xB8], true), ([0x67, 0x42, 0x00, 0x1F], true),
        ([0x41, 0x9A, 0x02], false), ([0x01, 0x9A], false), ([0x68, 0xCE, 0x3C], false), ([0x06, 0x05], false),
        ([0x1E, 0x00], false), ([0x19, 0x00, 0x02, 0x65, 0x88], false),
    ])
    func h264SingleNALUnits(payload: [UInt8], keyframe: Bool) {
        #expect(h264(payload) == keyframe)
    }

    /// STAP-A (24): a key frame when any aggregated NAL unit is an IDR or an SPS, wherever it is.
    @Test(arguments: [
        // SPS, PPS, IDR
        ([UInt8(0x78), 0x00, 0x04, 0x67, 0x42, 0x00, 0x1F, 0x00, 0x02, 0x68, 0xCE, 0x00, 0x03, 0x65, 0x88, 0x84], true),
        // PPS, then IDR as the last unit, ending at the last byte
        ([0x78, 0x00, 0x02, 0x68, 0xCE, 0x00, 0x01, 0x65], true),
        // PPS and SEI only
        ([0x78, 0x00, 0x02, 0x68, 0xCE, 0x00, 0x02, 0x06, 0x05], false),
        // two non-IDR slices
        ([0x78, 0x00, 0x02, 0x41, 0x9A, 0x00, 0x02, 0x41, 0x9B], false),
    ])
    func h264STAPA(payload: [UInt8], keyframe: Bool) {
        #expect(h264(payload) == keyframe)
    }

    /// FU-A (28): only the start fragment (S bit) of an IDR or SPS; continuation and end
    /// fragments and the start of a non-IDR slice are not.
    @Test(arguments: [
        ([UInt8(0x7C), 0x85, 0xB8, 0x00], true),  // start, IDR
        ([0x7C, 0x87, 0x42], true),  // start, SPS
        ([0x7C, 0x05, 0xB8, 0x00], false),  // middle, IDR
        ([0x7C, 0x45, 0xB8], false),  // end, IDR
        ([0x5C, 0x81, 0x9A], false),  // start, non-IDR slice
        ([0x7C, 0x85], true),  // start header with no data yet is still the start
    ])
    func h264FUA(payload: [UInt8], keyframe: Bool) {
        #expect(h264(payload) == keyframe)
    }

    /// Short and malformed H.264 payloads never trap and are not key frames: empty, a lone
    /// FU-A or STAP-A indicator, a STAP-A cut inside its size field, a zero size, or a size
    /// running past the end in front of a non-key NAL unit.
    @Test(arguments: [
        [UInt8](), [0x7C], [0x5C], [0x78], [0x78, 0x00], [0x78, 0x00, 0x02],
        [0x78, 0x00, 0x00, 0x65, 0x88], [0x78, 0x00, 0x09, 0x41, 0x9A],
        [0x78, 0x00, 0x02, 0x68, 0xCE, 0x00],
    ])
    func h264MalformedIsNotAKeyframe(payload: [UInt8]) {
        #expect(!h264(payload))
    }

    /// A STAP-A whose size field runs past the end of the payload is malformed even when the
    /// byte after the size looks like an IDR or SPS header: by the detector's contract
    /// ("malformed payloads are simply not keyframes") and RFC 6184 §5.7.1, it is not a
    /// key frame, so a slot never switches on a truncated aggregate.
    @Test(arguments: [
        [UInt8(0x78), 0x00, 0xFF, 0x65],  // one IDR unit claiming 255 bytes, 1 present
        [0x78, 0x00, 0x05, 0x67, 0x42],  // SPS claiming 5 bytes, 2 present
        [0x78, 0x00, 0x02, 0x68, 0xCE, 0x00, 0x09, 0x65, 0x88],  // PPS, then an IDR cut short
    ])
    func h264TruncatedSTAPAIsNotAKeyframe(payload: [UInt8]) {
        #expect(!h264(payload))
    }

    /// Random payloads never trap, for either codec; with a NAL type other than 5, 7, 24 or 28
    /// in the first byte they are never H.264 key frames.
    @Test func randomPayloadsNeverTrap() {
        var generator = SplitMix64(seed: 0x5EED_F00D)
        var h264Keyframes = 0
        for round in 0..<5_000 {
            let count = Int.random(in: 0...24, using: &generator)
            var payload = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if round % 2 == 0, !payload.isEmpty { payload[0] = payload[0] & 0xE0 | [24, 28][round % 4 / 2] }
            let isKey = h264(payload)
            if let first = payload.first, ![5, 7, 24, 28].contains(first & 0x1F) { #expect(!isKey, "\(payload)") }
            if isKey { h264Keyframes += 1 }
            _ = vp8(payload)
        }
        #expect(h264Keyframes > 0, "the generator should hit some key frame shapes")
    }
}
