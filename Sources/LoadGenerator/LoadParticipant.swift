import ChorusCore
import DTLS
import NIOCore
import PeerTransport

/// One simulated participant of a load run, made of three parts:
/// - its connection (`LoadConnection`: the client side of ICE, DTLS, SRTP and RTCP feedback,
///   over PeerTransport's `ClientTransport`);
/// - its traffic sources: a microphone (`LoadMicrophone`, pre-encoded Opus every 20 ms, DTX for
///   a silent one) and, with video, a camera (`LoadCameraSender`, pre-encoded VP8 at 15 fps,
///   restarted at its keyframe on PLI or FIR);
/// - its statistics (`LoadStatistics`: the mix's loss, jitter and rate, the slots' frames, and
///   for a probe listener the onsets' mouth-to-ear latency).
/// The participant joins them: the packets its sources make leave through its connection, and
/// what the connection decrypts goes to its statistics (RTP) or its camera (RTCP).
///
/// Confined to one of the generator's event loops: the runner builds it, hands it over
/// (`confine(to:)`, then `connection.send` and `start` with the answer), after which its
/// shard calls `tick` every 5 ms (unless it is idle until later, `idleUntil`) and `receive`
/// for each datagram, all on the loop. Off the loop only its constants (`let`s: identity,
/// SSRCs, ICE credentials) are read.
///
/// `@unchecked Sendable`: after the hand-over every use is on its event loop, and `tick`,
/// `receive` and `takeInterval` check that; the runner reads the results only once every loop
/// has stopped (`LoadShard.Contents`).
final class LoadParticipant: @unchecked Sendable {
    let room: Int
    let userId: String
    /// The connection's part in the run: a participant's own connection (audio, and video when
    /// the server carries it there), or one of the extra connections Janus needs for video.
    enum Role: Equatable {
        case member
        /// A Janus VideoRoom publisher connection: the member's camera, video only.
        case camera
        /// A Janus VideoRoom subscriber connection: one watched camera, offered by the server.
        case subscriber
    }

    let role: Role
    /// The participant an extra connection belongs to (nil for a member itself).
    let owner: LoadParticipant?
    let timeline: RoomTimeline
    /// Whether someone else in the room talks, so this participant must receive audio (the
    /// only talker of a room hears a silent mix, which the server does not send).
    var expectsAudio = true
    /// How this participant decides on DTX (`LoadDTX`).
    var dtxMode = LoadDTX.negotiated
    /// Whether the offer asks for transport-wide congestion control.
    var offersTransportCC = false
    let audioSSRC = UInt32.random(in: 1...UInt32.max)
    /// One SSRC per layer of the camera (one without simulcast), lowest layer first.
    let videoSSRCs: [UInt32]
    var videoSSRC: UInt32 { videoSSRCs[0] }
    /// The camera this participant sends, if any, and its receive-only video slots.
    let video: LoadCamera?
    let slots: Int
    var connection: LoadConnection
    private(set) var microphone: LoadMicrophone?
    private(set) var camera: LoadCameraSender?
    var statistics: LoadStatistics
    /// Until when `tick` has nothing to do: the earliest of the transport's next timer and the
    /// sources' next packets. The shard's 5 ms loop passes over the participant until then;
    /// in a big room that is most participants on most loops (silent listeners in DTX send
    /// every 400 ms), and the generator shares the machine with the server.
    private(set) var idleUntil = MediaTime(nanoseconds: 0)
    /// The event loop the participant lives on once handed over (nil when a unit test drives
    /// it directly, on the test's thread).
    private var loop: (any EventLoop)?

    init(room: Int, userId: String, audio: LoadAudio?, timeline: RoomTimeline, isBurstTalker: Bool, isProbe: Bool,
         dtlsContext: DTLSContext, video: LoadCamera? = nil, slots: Int = 0, role: Role = .member,
         owner: LoadParticipant? = nil) {
        self.room = room
        self.userId = userId
        self.role = role
        self.owner = owner
        self.timeline = timeline
        self.video = video
        self.slots = video == nil ? 0 : slots
        var ssrcs: [UInt32] = []
        while ssrcs.count < max(video?.layers.count ?? 1, 1) {
            let ssrc = UInt32.random(in: 1...UInt32.max)
            if !ssrcs.contains(ssrc) { ssrcs.append(ssrc) }
        }
        videoSSRCs = ssrcs
        connection = LoadConnection(dtlsContext: dtlsContext)
        statistics = LoadStatistics(probe: isProbe ? LoadProbe(timeline: timeline) : nil)
        microphone = audio.map { LoadMicrophone(audio: $0, ssrc: audioSSRC, timeline: timeline, isBurstTalker: isBurstTalker) }
        camera = video.map { LoadCameraSender(camera: $0, ssrcs: ssrcs) }
    }

    /// The hand-over: from now on every call comes on `loop` (called there, before `start`).
    func confine(to loop: any EventLoop) {
        loop.preconditionInEventLoop()
        self.loop = loop
    }

    func offer(host: String = "127.0.0.1", port: Int, tcp: Bool = false) -> String {
        LoadSDP.offer(ice: connection.localICE, fingerprint: connection.dtlsContext.certificate.sdpFingerprint, host: host,
                      port: port, media: .init(audioSSRC: microphone == nil ? nil : audioSSRC,
                                               videoSSRC: video == nil ? nil : videoSSRC, slots: slots,
                                               simulcastRIDs: video?.rids ?? [], transportCC: offersTransportCC, tcp: tcp))
    }

    /// Our answer to the server's offer (a subscriber connection), remembering its VP8 type.
    func answer(toOffer offer: String, host: String, port: Int) -> String {
        let answer = LoadSDP.answer(toOffer: offer, ice: connection.localICE,
                                    fingerprint: connection.dtlsContext.certificate.sdpFingerprint, host: host, port: port)
        if let payloadType = answer.videoPayloadType { statistics.videoPayloadType = payloadType }
        return answer.sdp
    }

    /// The answer arrived: ICE starts toward its candidate, and the sources learn what it
    /// decided (DTX, transport-cc). `controlling` is false when the server made the offer.
    func start(_ answer: LoadSDP.Answer, now: MediaTime, controlling: Bool = true) {
        let transportCC = offersTransportCC && answer.transportCC
        statistics.ignoresRTX = offersTransportCC
        microphone?.start(dtx: dtxMode, answerUsesDTX: answer.usesDTX, transportWideSequence: transportCC)
        camera?.start(transportWideSequence: transportCC)
        if video?.isSimulcast == true, !answer.simulcast {
            fail("the server declined the camera's simulcast")
            return
        }
        connection.start(answer, rtcpSSRC: audioSSRC, controlling: controlling, transportCC: transportCC, now: now)
        updateIdle()
    }

    func fail(_ reason: String) {
        connection.fail(reason)
    }

    /// Every 5 ms while not idle: the connection's timers (checks, DTLS retransmissions,
    /// consent, transport-cc feedback), and once established the sources' due packets.
    func tick(now: MediaTime) {
        loop?.preconditionInEventLoop()
        switch connection.phase {
        case .joining, .failed:
            idleUntil = MediaTime(nanoseconds: .max)
            return
        case .checking, .handshaking, .established:
            break
        }
        connection.poll(now: now)
        if connection.phase == .established {
            microphone?.tick(now: now) { connection.sendRTP($0) }
            camera?.tick(now: now) { connection.sendRTP($0) }
            connection.flush()
        }
        updateIdle()
    }

    private func updateIdle() {
        var until = connection.nextDeadline
        if let next = microphone?.nextSendAt, next < until { until = next }
        if let next = camera?.nextSendAt, next < until { until = next }
        idleUntil = until
    }

    /// One datagram from the server: its packets go to the statistics (RTP) and the camera
    /// (RTCP: keyframe requests); a newly established call wakes the sources at once.
    func receive(_ datagram: consuming [UInt8], now: MediaTime) {
        loop?.preconditionInEventLoop()
        if let header = connection.receiveHeader(datagram, now: now) {
            statistics.record(header, now: now)
            return
        }
        let wasEstablished = connection.phase == .established
        switch connection.receive(datagram, now: now) {
        case .rtp(let rtp)?: statistics.record(rtp, now: now)
        case .rtcp(let compound)?: camera?.handle(compound)
        default: break
        }
        if !wasEstablished, connection.phase == .established {
            idleUntil = now
        } else {
            // A datagram can bring work forward (the first transport-cc arrival, a DTLS flight).
            let deadline = connection.nextDeadline
            if deadline < idleUntil { idleUntil = deadline }
        }
    }

    /// Audio reception totals of the last interval (for the per-second samples).
    func takeInterval() -> (received: Int, expected: Int) {
        loop?.preconditionInEventLoop()
        return statistics.takeInterval()
    }
}
