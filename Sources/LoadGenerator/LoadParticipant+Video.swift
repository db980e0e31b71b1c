import ChorusCore
import RTCP
import RTP

/// The RTP state of a simulated camera: which frame of the pre-encoded loop goes next, when,
/// and the sequence number, timestamp and VP8 picture ID that keep counting across loops.
struct VideoSender: Sendable {
    var frameIndex = 0
    var nextAt: MediaTime?
    var sequenceNumber = UInt16.random(in: 0...UInt16.max)
    var timestamp = UInt32.random(in: 0...UInt32.max)
    var pictureID = UInt16.random(in: 0...0x7FFF)
    /// A keyframe was asked for: the next frame sent is the loop's keyframe.
    var restartAtKeyFrame = false
}

extension LoadParticipant {
    /// Sends the camera's frames that are due (15 fps; a late loop catches up by two at most).
    func tickVideo(now: MediaTime) {
        guard let video, !video.frames.isEmpty else { return }
        let interval = UInt64(1_000_000_000 / LoadVideo.framesPerSecond)
        var next = videoSender.nextAt ?? now.adding(nanoseconds: UInt64.random(in: 0..<interval))
        var sent = 0
        while next <= now, sent < 2 {
            if videoSender.restartAtKeyFrame {
                videoSender.frameIndex = 0
                videoSender.restartAtKeyFrame = false
            }
            sendVideoFrame(video.frames[videoSender.frameIndex % video.frames.count])
            videoSender.frameIndex = (videoSender.frameIndex + 1) % video.frames.count
            next = next.adding(nanoseconds: interval)
            sent += 1
        }
        videoSender.nextAt = next <= now ? now.adding(nanoseconds: interval) : next
    }

    /// One frame as RTP (RFC 7741): a payload descriptor before each chunk, the marker on the last.
    private func sendVideoFrame(_ frame: LoadVideo.Frame) {
        guard let srtp else { return }
        for (index, chunk) in frame.chunks.enumerated() {
            let last = index == frame.chunks.count - 1
            let header = RTPHeaderFields(
                marker: last, payloadType: PayloadType(masking: LoadSDP.vp8PayloadType),
                sequenceNumber: videoSender.sequenceNumber, timestamp: videoSender.timestamp, ssrc: SSRC(videoSSRC))
            var packet: [UInt8] = []
            packet.reserveCapacity(12 + 4 + chunk.count + 16)
            do {
                try header.serialize(into: &packet)
                packet.appendWriting(count: 4) { writer in
                    writer.put32(LoadVideo.descriptorWord(pictureID: videoSender.pictureID, startOfFrame: index == 0))
                }
                packet += chunk
                try srtp.protectRTP(&packet)
                send(packet)
            } catch {
                errors.append("SRTP protect (video): \(error)")
            }
            videoSender.sequenceNumber &+= 1
        }
        videoSender.timestamp &+= LoadVideo.timestampStep
        videoSender.pictureID = (videoSender.pictureID &+ 1) & 0x7FFF
    }

    /// An unprotected compound RTCP packet from the server: PLI or FIR for our camera make the
    /// next frame a keyframe. Anything malformed is ignored.
    func receiveRTCP(_ packet: [UInt8]) {
        guard video != nil, let compound = try? RTCPCompoundPacket(parsing: packet) else { return }
        for item in compound {
            switch item {
            case .pictureLossIndication(let pli) where pli.mediaSSRC.rawValue == videoSSRC:
                requestKeyFrame()
            case .fullIntraRequest(let fir) where fir.entries.contains(where: { $0.ssrc.rawValue == videoSSRC }):
                requestKeyFrame()
            default:
                break
            }
        }
    }

    private func requestKeyFrame() {
        keyframeRequestsReceived += 1
        videoSender.restartAtKeyFrame = true
    }
}
