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

/// A simulated participant's camera as a traffic source: its pre-encoded VP8 loops
/// (`LoadCamera`: one stream, or three simulcast layers) sent as RTP at 15 fps, every layer's
/// frame of the same capture time together as a simulcast encoder sends them, and restarted
/// at a layer's keyframe when the server asks for one (PLI or FIR for that layer's SSRC).
///
/// A value owned by its participant: `start` once the call is established, `tick` on the
/// participant's tick, `handle` for each RTCP compound from the server; `nextSendAt` says when
/// the next frame is due.
struct LoadCameraSender {
    let camera: LoadCamera
    /// One SSRC per layer, lowest layer first.
    let ssrcs: [UInt32]
    private(set) var senders: [VideoSender]
    private(set) var keyframeRequestsReceived = 0
    /// The header extensions every packet carries: the layer's RID with simulcast (RFC 8852
    /// §3.1: Firefox always sends it, Chromium until the server's reports acknowledge the SSRC),
    /// and with transport-cc an empty transport-wide sequence number the transport fills in.
    private var stampsTransportWideSequence = false

    init(camera: LoadCamera, ssrcs: [UInt32]) {
        self.camera = camera
        self.ssrcs = ssrcs
        senders = ssrcs.map { _ in VideoSender() }
    }

    mutating func start(transportWideSequence: Bool) {
        stampsTransportWideSequence = transportWideSequence
    }

    /// Sends the frames that are due (15 fps; a late loop catches up by two at most).
    mutating func tick(now: MediaTime, send: (consuming [UInt8]) -> Void) {
        let interval = UInt64(1_000_000_000 / LoadVideo.framesPerSecond)
        var next = senders[0].nextAt ?? now.adding(nanoseconds: UInt64.random(in: 0..<interval))
        var sent = 0
        while next <= now, sent < 2 {
            for layer in camera.layers.indices where !camera.layers[layer].frames.isEmpty {
                sendNextFrame(layer: layer, send: send)
            }
            next = next.adding(nanoseconds: interval)
            sent += 1
        }
        senders[0].nextAt = next <= now ? now.adding(nanoseconds: interval) : next
    }

    /// When the next frame is due; nil before the first tick.
    var nextSendAt: MediaTime? { senders[0].nextAt }

    private mutating func sendNextFrame(layer: Int, send: (consuming [UInt8]) -> Void) {
        let stream = camera.layers[layer]
        if senders[layer].restartAtKeyFrame {
            senders[layer].frameIndex = 0
            senders[layer].restartAtKeyFrame = false
        }
        sendFrame(stream.frames[senders[layer].frameIndex % stream.frames.count], layer: layer, send: send)
        senders[layer].frameIndex = (senders[layer].frameIndex + 1) % stream.frames.count
    }

    /// One frame as RTP (RFC 7741): a payload descriptor before each chunk (S on the first,
    /// the 15-bit picture ID on all), the marker on the last.
    private mutating func sendFrame(_ frame: LoadVideo.Frame, layer: Int, send: (consuming [UInt8]) -> Void) {
        var sender = senders[layer]
        var header = RTPHeaderFields(
            payloadType: PayloadType(masking: LoadSDP.vp8PayloadType), sequenceNumber: 0, timestamp: sender.timestamp,
            ssrc: SSRC(ssrcs[layer]), extensions: extensions(layer: layer))
        for (index, chunk) in frame.chunks.enumerated() {
            header.marker = index == frame.chunks.count - 1
            header.sequenceNumber = sender.sequenceNumber
            var packet: [UInt8] = []
            // Room for the header, the descriptor and the SRTP tag: one buffer all the way.
            packet.reserveCapacity(24 + 4 + chunk.count + 16)
            guard (try? header.serialize(into: &packet)) != nil else { return }
            LoadVideo.descriptor(pictureID: sender.pictureID, startOfFrame: index == 0).write(into: &packet)
            packet += chunk
            send(packet)
            sender.sequenceNumber &+= 1
        }
        sender.timestamp &+= LoadVideo.timestampStep
        sender.pictureID = (sender.pictureID &+ 1) & 0x7FFF
        senders[layer].sequenceNumber = sender.sequenceNumber
        senders[layer].timestamp = sender.timestamp
        senders[layer].pictureID = sender.pictureID
    }

    private func extensions(layer: Int) -> [RTPHeaderExtensionElement] {
        var extensions: [RTPHeaderExtensionElement] = []
        if camera.rids.indices.contains(layer) {
            extensions.append(RTPHeaderExtensionElement(id: LoadSDP.rtpStreamIDExtensionID,
                                                        value: .bytes(Array(camera.rids[layer].utf8))))
        }
        if stampsTransportWideSequence {
            extensions.append(RTPHeaderExtensionElement(id: LoadSDP.transportWideCCExtensionID,
                                                        value: .transportSequenceNumber(0)))
        }
        return extensions
    }

    /// RTCP from the server: a PLI or FIR for one of our streams makes that stream's next frame
    /// its loop's keyframe; anything else is not the camera's business.
    mutating func handle(_ compound: RTCPCompoundPacket) {
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

    private mutating func requestKeyFrame(ssrc: UInt32) {
        guard let layer = ssrcs.firstIndex(of: ssrc) else { return }
        keyframeRequestsReceived += 1
        senders[layer].restartAtKeyFrame = true
    }
}
