import ChorusCore
import RTCP
import RTP

/// The RTP state of one stream of a simulated camera: which frame of the pre-encoded loop goes
/// next, when, and the sequence number, timestamp and VP8 picture ID that keep counting across
/// loops.
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
    /// Sends the camera's frames that are due (15 fps; a late loop catches up by two at most),
    /// every layer's frame of the same capture time together, as a simulcast encoder does.
    func tickVideo(now: MediaTime) {
        guard let video else { return }
        let interval = UInt64(1_000_000_000 / LoadVideo.framesPerSecond)
        var next = videoSenders[0].nextAt ?? now.adding(nanoseconds: UInt64.random(in: 0..<interval))
        var sent = 0
        while next <= now, sent < 2 {
            for layer in video.layers.indices where !video.layers[layer].frames.isEmpty {
                sendNextFrame(layer: layer, of: video.layers[layer], rid: video.rids.indices.contains(layer) ? video.rids[layer] : nil)
            }
            next = next.adding(nanoseconds: interval)
            sent += 1
        }
        videoSenders[0].nextAt = next <= now ? now.adding(nanoseconds: interval) : next
    }

    private func sendNextFrame(layer: Int, of stream: LoadVideo, rid: String?) {
        if videoSenders[layer].restartAtKeyFrame {
            videoSenders[layer].frameIndex = 0
            videoSenders[layer].restartAtKeyFrame = false
        }
        sendVideoFrame(stream.frames[videoSenders[layer].frameIndex % stream.frames.count], layer: layer, rid: rid)
        videoSenders[layer].frameIndex = (videoSenders[layer].frameIndex + 1) % stream.frames.count
    }

    /// One frame as RTP (RFC 7741): a payload descriptor before each chunk, the marker on the
    /// last; with simulcast each packet names its layer's RID (RFC 8852 §3.1: Firefox always
    /// does, Chromium until the server's reports acknowledge the SSRC), with transport-cc each
    /// carries the next transport-wide sequence number.
    private func sendVideoFrame(_ frame: LoadVideo.Frame, layer: Int, rid: String?) {
        guard let srtp else { return }
        var extensions: [RTPHeaderExtensionElement] = []
        if let rid { extensions.append(RTPHeaderExtensionElement(id: LoadSDP.rtpStreamIDExtensionID, value: .bytes(Array(rid.utf8)))) }
        let stamps = feedbackRecorder != nil
        if stamps {
            extensions.append(RTPHeaderExtensionElement(id: LoadSDP.transportWideCCExtensionID, value: .transportSequenceNumber(0)))
        }
        var sender = videoSenders[layer]
        for (index, chunk) in frame.chunks.enumerated() {
            let last = index == frame.chunks.count - 1
            if stamps { extensions[extensions.count - 1].value = .transportSequenceNumber(nextTransportSequence()) }
            let header = RTPHeaderFields(
                marker: last, payloadType: PayloadType(masking: LoadSDP.vp8PayloadType),
                sequenceNumber: sender.sequenceNumber, timestamp: sender.timestamp, ssrc: SSRC(videoSSRCs[layer]),
                extensions: extensions)
            var packet: [UInt8] = []
            packet.reserveCapacity(12 + 12 + 4 + chunk.count + 16)
            do {
                try header.serialize(into: &packet)
                packet.appendWriting(count: 4) { writer in
                    writer.put32(LoadVideo.descriptorWord(pictureID: sender.pictureID, startOfFrame: index == 0))
                }
                packet += chunk
                try srtp.protectRTP(&packet)
                send(packet)
            } catch {
                errors.append("SRTP protect (video): \(error)")
            }
            sender.sequenceNumber &+= 1
        }
        sender.timestamp &+= LoadVideo.timestampStep
        sender.pictureID = (sender.pictureID &+ 1) & 0x7FFF
        videoSenders[layer].sequenceNumber = sender.sequenceNumber
        videoSenders[layer].timestamp = sender.timestamp
        videoSenders[layer].pictureID = sender.pictureID
    }

    /// An unprotected compound RTCP packet from the server: PLI or FIR for one of our camera's
    /// streams make that stream's next frame a keyframe. Anything malformed is ignored.
    func receiveRTCP(_ packet: [UInt8]) {
        guard video != nil, let compound = try? RTCPCompoundPacket(parsing: packet) else { return }
        for item in compound {
            switch item {
            case .pictureLossIndication(let pli):
                requestKeyFrame(ssrc: pli.mediaSSRC.rawValue)
            case .fullIntraRequest(let fir):
                for entry in fir.entries { requestKeyFrame(ssrc: entry.ssrc.rawValue) }
            default:
                break
            }
        }
    }

    private func requestKeyFrame(ssrc: UInt32) {
        guard let layer = videoSSRCs.firstIndex(of: ssrc) else { return }
        keyframeRequestsReceived += 1
        videoSenders[layer].restartAtKeyFrame = true
    }
}
