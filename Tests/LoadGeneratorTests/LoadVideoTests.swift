import DTLS
import RTCP
import RTP
import Testing

@testable import LoadGenerator

/// The simulated camera: what the server's forwarder sees must be a real VP8 stream, or the
/// video load figures measure nothing a browser would send.
@Suite("Load generator: VP8 camera")
struct LoadVideoTests {
    /// Three seconds at 15 fps, a keyframe only first (the loop restarts there), packets that
    /// fit an MTU, and about the configured 300 kbps.
    @Test func encodedLoop() throws {
        let video = try LoadVideo.make(seconds: 3)
        #expect(video.frames.count == 45)
        #expect(video.frames.first?.isKeyFrame == true)
        #expect(video.frames.dropFirst().allSatisfy { !$0.isKeyFrame })
        #expect(video.frames.allSatisfy { !$0.chunks.isEmpty && $0.chunks.allSatisfy { $0.count <= LoadVideo.maxChunk } })
        let kbps = Double(video.bytesPerLoop * 8) / 3 / 1_000
        #expect(kbps > 150 && kbps < 600, "\(kbps) kbps")
    }

    /// Descriptor + first chunk parse as the forwarder parses them: start of frame, the 15-bit
    /// picture ID, and the VP8 payload header's keyframe flag and 640×360 size.
    @Test func packetsParseAsVP8() throws {
        let video = try LoadVideo.make(seconds: 1)
        let key = LoadVideo.descriptor(pictureID: 0x1234, startOfFrame: true).serialize() + video.frames[0].chunks[0]
        let descriptor = try VP8PayloadDescriptor(parsing: key)
        #expect(descriptor.isStartOfFrame && descriptor.pictureID == 0x1234 && descriptor.hasLongPictureID)
        #expect(descriptor.isKeyFrame(payload: key[...]))
        let header = descriptor.payloadHeader(payload: key[...])
        #expect(header?.width == 640 && header?.height == 360)

        let delta = LoadVideo.descriptor(pictureID: 0x7FFF, startOfFrame: true).serialize() + video.frames[1].chunks[0]
        #expect(try !VP8PayloadDescriptor(parsing: delta).isKeyFrame(payload: delta[...]))
        let middle = LoadVideo.descriptor(pictureID: 1, startOfFrame: false).serialize() + [0x00, 0x01]
        #expect(try !VP8PayloadDescriptor(parsing: middle).isStartOfFrame)
    }

    /// Chunks are near-equal, cover the frame exactly and never exceed the limit.
    @Test func chunking() {
        let frame = (0..<2_500).map { UInt8(truncatingIfNeeded: $0) }
        let chunks = LoadVideo.chunk(frame)
        #expect(chunks.count == 3 && chunks.allSatisfy { $0.count <= LoadVideo.maxChunk })
        #expect(chunks.flatMap { $0 } == frame)
        #expect(LoadVideo.chunk([1, 2, 3]) == [[1, 2, 3]])
    }
}

/// The camera's answer to the server's keyframe requests: a PLI or FIR for our SSRC restarts
/// the loop at its keyframe; one for another SSRC changes nothing. (A malformed or forged
/// compound never reaches the camera: the client transport drops it, see PeerTransportTests.)
@Suite("Load generator: keyframe requests")
struct LoadKeyframeRequestTests {
    static func camera() throws -> LoadCameraSender {
        LoadCameraSender(camera: .single(try LoadVideo.make(seconds: 1)), ssrcs: [0x1234_5678])
    }

    /// RFC 4585 §6.3.1 PLI: V=2, FMT=1, PT=206, length 2, sender SSRC, media SSRC.
    static func pli(media: UInt32) throws -> RTCPCompoundPacket {
        try RTCPCompoundPacket(parsing: [0x81, 206, 0, 2, 0, 0, 0, 1] + withUnsafeBytes(of: media.bigEndian, Array.init))
    }

    /// RFC 5104 §4.3.1 FIR: V=2, FMT=4, PT=206, length 4, sender, media 0, one entry (SSRC, seq).
    static func fir(entry: UInt32) throws -> RTCPCompoundPacket {
        try RTCPCompoundPacket(parsing: [0x84, 206, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0]
            + withUnsafeBytes(of: entry.bigEndian, Array.init) + [7, 0, 0, 0])
    }

    @Test func pliAndFirForOurCameraRestartAtTheKeyframe() throws {
        var camera = try Self.camera()
        let ssrc = camera.ssrcs[0]
        camera.handle(try Self.pli(media: ssrc &+ 1))
        #expect(camera.keyframeRequestsReceived == 0 && !camera.senders[0].restartAtKeyFrame)
        camera.handle(try Self.pli(media: ssrc))
        #expect(camera.keyframeRequestsReceived == 1 && camera.senders[0].restartAtKeyFrame)
        camera.handle(try Self.fir(entry: ssrc))
        #expect(camera.keyframeRequestsReceived == 2)
    }
}
