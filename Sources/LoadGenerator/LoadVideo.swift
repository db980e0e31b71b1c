import CVPX
import Foundation
import RTP

/// VP8 video a simulated participant sends as its camera: a loop of frames encoded once at
/// start with libvpx (640×360, 15 fps, ~300 kbps, a keyframe only at the loop's start) and
/// split into RTP-sized partitions, so the generator spends its CPU on the protocol.
///
/// A keyframe request (PLI or FIR from the server) restarts the loop at its keyframe: the
/// frames after it reference exactly that frame, so the stream stays decodable, as a real
/// encoder's would after a forced keyframe.
struct LoadVideo: Sendable {
    /// One encoded frame: its chunks of at most `maxChunk` bytes (a VP8 payload descriptor is
    /// put in front of each at send time) and whether it is a keyframe.
    struct Frame: Sendable {
        var chunks: [[UInt8]]
        var isKeyFrame: Bool
    }

    static let width = 640
    static let height = 360
    static let framesPerSecond = 15
    static let bitrate = 300_000
    /// RTP timestamp step per frame on the 90 kHz video clock.
    static let timestampStep = UInt32(90_000 / framesPerSecond)
    /// Payload bytes per packet, leaving room for RTP, the descriptor and SRTP's tag in 1200.
    static let maxChunk = 1_100

    let frames: [Frame]
    /// The picture's size (what a keyframe's VP8 header announces).
    var width = LoadVideo.width
    var height = LoadVideo.height

    var bytesPerLoop: Int { frames.reduce(0) { $0 + $1.chunks.reduce(0) { $0 + $1.count } } }

    struct EncoderError: Error, CustomStringConvertible {
        var description: String
    }

    /// Encodes `seconds` of a moving test pattern at `width`×`height` (even sizes) and `bitrate`.
    static func make(seconds: Int = 3, width: Int = LoadVideo.width, height: Int = LoadVideo.height,
                     bitrate: Int = LoadVideo.bitrate) throws -> LoadVideo {
        var config = vpx_codec_enc_cfg_t()
        guard chorus_vpx_vp8_default_config(&config) == VPX_CODEC_OK else {
            throw EncoderError(description: "VP8: no default configuration")
        }
        config.g_w = UInt32(width)
        config.g_h = UInt32(height)
        config.g_timebase = vpx_rational(num: 1, den: Int32(framesPerSecond))
        config.rc_target_bitrate = UInt32(bitrate / 1_000)
        config.rc_end_usage = VPX_CBR
        config.g_lag_in_frames = 0
        config.g_error_resilient = vpx_codec_er_flags_t(VPX_ERROR_RESILIENT_DEFAULT)
        config.kf_mode = VPX_KF_DISABLED
        config.g_threads = 1
        var codec = vpx_codec_ctx_t()
        guard chorus_vpx_vp8_encoder_init(&codec, &config) == VPX_CODEC_OK else {
            throw EncoderError(description: "VP8: encoder init failed")
        }
        defer { vpx_codec_destroy(&codec) }
        _ = chorus_vpx_set_cpu_used(&codec, 8)
        var frames: [Frame] = []
        var pixels = [UInt8](repeating: 0, count: width * height * 3 / 2)
        for index in 0..<(seconds * framesPerSecond) {
            let encoded = try pixels.withUnsafeMutableBufferPointer { buffer in
                drawPattern(into: buffer, width: width, height: height, frame: index)
                return try encode(buffer, width: width, height: height, codec: &codec, pts: index,
                                  forceKeyFrame: index == 0)
            }
            frames.append(contentsOf: encoded)
        }
        guard frames.first?.isKeyFrame == true else { throw EncoderError(description: "VP8: no leading keyframe") }
        return LoadVideo(frames: frames, width: width, height: height)
    }

    private static func encode(_ i420: UnsafeMutableBufferPointer<UInt8>, width: Int, height: Int,
                               codec: inout vpx_codec_ctx_t, pts: Int, forceKeyFrame: Bool) throws -> [Frame] {
        var image = vpx_image_t()
        guard vpx_img_wrap(&image, VPX_IMG_FMT_I420, UInt32(width), UInt32(height), 1, i420.baseAddress) != nil
        else { throw EncoderError(description: "VP8: cannot wrap the image") }
        let flags: vpx_enc_frame_flags_t = forceKeyFrame ? vpx_enc_frame_flags_t(VPX_EFLAG_FORCE_KF) : 0
        guard vpx_codec_encode(&codec, &image, vpx_codec_pts_t(pts), 1, flags, chorus_vpx_deadline_realtime())
            == VPX_CODEC_OK
        else { throw EncoderError(description: "VP8: encode failed") }
        var frames: [Frame] = []
        var iterator: vpx_codec_iter_t?
        var data: UnsafeRawPointer?
        var size = 0
        var isKey: Int32 = 0
        while chorus_vpx_next_frame(&codec, &iterator, &data, &size, &isKey) != 0, let data {
            let bytes = [UInt8](UnsafeRawBufferPointer(start: data, count: size))
            frames.append(Frame(chunks: chunk(bytes), isKeyFrame: isKey != 0))
        }
        return frames
    }

    /// Equal-sized chunks of at most `maxChunk` bytes (RFC 7741 lets a frame split anywhere).
    static func chunk(_ bytes: [UInt8]) -> [[UInt8]] {
        let count = max(1, (bytes.count + maxChunk - 1) / maxChunk)
        let size = (bytes.count + count - 1) / count
        return stride(from: 0, to: max(bytes.count, 1), by: max(size, 1)).map {
            Array(bytes[$0..<min(bytes.count, $0 + size)])
        }
    }

    /// A diagonal gradient with a bright bar sweeping across: enough motion for real deltas.
    /// Drawn in 640×360 pattern units whatever the size, so every layer of a simulcast camera
    /// shows the same picture (over unsafe buffers: a debug build draws 720p quickly enough).
    private static func drawPattern(into pixels: UnsafeMutableBufferPointer<UInt8>, width: Int, height: Int,
                                    frame: Int) {
        let bar = (frame * 16) % 640
        for y in 0..<height {
            let row = y * width
            let patternY = y * 640 / width
            for x in 0..<width {
                let patternX = x * 640 / width
                let inBar = abs(patternX - bar) < 24
                pixels[row + x] = inBar ? 235 : UInt8(truncatingIfNeeded: (patternX + patternY + frame * 4) / 4 + 16)
            }
        }
        let chroma = width * height
        for index in 0..<(width * height / 2) {
            pixels[chroma + index] = UInt8(truncatingIfNeeded: 128 + (index / 97 + frame) % 32)
        }
    }

    /// The RFC 7741 §4.2 payload descriptor in front of each chunk, as browsers write it for a
    /// stream without temporal layers: S on the frame's first packet, partition 0 (the frame
    /// may be split anywhere, §4.4), and I with the 15-bit picture ID (M set).
    static func descriptor(pictureID: UInt16, startOfFrame: Bool) -> VP8PayloadDescriptor {
        VP8PayloadDescriptor(isStartOfPartition: startOfFrame, pictureID: pictureID, hasLongPictureID: true)
    }
}

/// A simulated participant's camera: one stream (`LoadVideo`), or three simulcast layers sent as
/// Chromium sends them for `sendEncodings` q (÷4), h (÷2) and f, each with its own SSRC, its RID
/// in the RtpStreamId header extension and its own keyframe restarts. The layers are the
/// generator's video model scaled: 320×180 at 150 kbit/s, 640×360 at 500 kbit/s and 1280×720 at
/// 1.5 Mbit/s targets (Chromium's caps for a 720p camera); what libvpx makes of the test pattern
/// at those targets is what is sent.
struct LoadCamera: Sendable {
    /// The streams, lowest first.
    let layers: [LoadVideo]
    /// Their RIDs, in the same order; empty for a single stream.
    let rids: [String]

    var isSimulcast: Bool { !rids.isEmpty }

    /// One stream: the generator's usual camera.
    static func single(_ video: LoadVideo) -> LoadCamera {
        LoadCamera(layers: [video], rids: [])
    }

    /// The three layers q, h and f.
    static func simulcast(seconds: Int = 3) throws -> LoadCamera {
        let layers = try [(320, 180, 150_000), (640, 360, 500_000), (1_280, 720, 1_500_000)].map { size in
            try LoadVideo.make(seconds: seconds, width: size.0, height: size.1, bitrate: size.2)
        }
        return LoadCamera(layers: layers, rids: ["q", "h", "f"])
    }
}
