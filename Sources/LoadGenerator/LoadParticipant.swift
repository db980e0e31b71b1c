import AudioMixer
import ChorusCore
import DTLS
import ICELite
import NIOCore
import PeerTransport
import RTP
import SRTP
import STUN
import Synchronization

/// When the room's burst talker started each tone burst: what probe listeners time their
/// onsets against. Shared by the participants of one room (on the generator's event loop);
/// the starts are behind a lock, so it is `Sendable` without `@unchecked` (the lock is taken
/// once per burst by the talker and once per onset heard by each probe).
final class RoomTimeline: Sendable {
    /// Every burst start of the run (a few a second; bounded for hour-long runs).
    private let burstStarts = Mutex<[MediaTime]>([])
    static let maximumBursts = 100_000

    func burstSent(at time: MediaTime) {
        burstStarts.withLock { starts in
            if starts.count < Self.maximumBursts { starts.append(time) }
        }
    }

    /// The latest burst start at or before `time`, within a second.
    func burst(before time: MediaTime) -> MediaTime? {
        burstStarts.withLock { starts in
            starts.last { $0 <= time && time.nanoseconds(since: $0) < 1_000_000_000 }
        }
    }

    /// The bursts started in `from..<until`.
    func bursts(from: MediaTime, until: MediaTime) -> [MediaTime] {
        burstStarts.withLock { starts in starts.filter { $0 >= from && $0 < until } }
    }
}

/// One simulated participant: the client side of ICE (checks with USE-CANDIDATE, consent
/// refreshes), DTLS (client role) and SRTP, sending its pre-encoded Opus every 20 ms and
/// receiving the room's mix. Probe listeners also decode the mix to time the burst onsets.
/// With video it also sends its pre-encoded VP8 camera at 15 fps (restarting at the keyframe
/// on PLI or FIR) and counts the frames forwarded into its slots (`LoadParticipant+Video`).
///
/// Confined to the generator's single event loop: the runner builds it, hands it over
/// (`confine(to:)`), then calls `start` with the answer, `tick` every 20 ms and `receive` for
/// each datagram, all on the loop; the datagrams it emits go through `send`. Off the loop only
/// its constants (`let`s: identity, SSRCs, ICE credentials, offer) are read.
///
/// `@unchecked Sendable`: used only on the event loop after the hand-over; `tick`/`receive` check it.
final class LoadParticipant: @unchecked Sendable {
    enum Phase: Equatable { case joining, checking, handshaking, established, failed(String) }

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
    /// The Opus this connection sends; nil for a video-only connection.
    let audio: LoadAudio?
    /// The payload type of the VP8 received (ours, or the one the server's offer chose).
    var videoPayloadType = LoadSDP.vp8PayloadType
    let timeline: RoomTimeline
    let isBurstTalker: Bool
    /// Whether someone else in the room talks, so this participant must receive audio (the
    /// only talker of a room hears a silent mix, which the server does not send).
    var expectsAudio = true
    let localICE = ICECredentials.random()
    let audioSSRC = UInt32.random(in: 1...UInt32.max)
    /// One SSRC per layer of the camera (one without simulcast), lowest layer first.
    let videoSSRCs: [UInt32]
    /// The camera's first (or only) stream's SSRC.
    var videoSSRC: UInt32 { videoSSRCs[0] }
    /// The camera this participant sends, if any, and its receive-only video slots.
    let video: LoadCamera?
    let slots: Int
    /// Whether the offer asks for transport-wide congestion control (`LoadParticipant+TransportCC`).
    var offersTransportCC = false
    /// Once the answer kept it: the next transport-wide sequence number stamped on what we send,
    /// and the arrivals of the server's numbers, reported back every 100 ms.
    var transportSequenceNumber = UInt16.random(in: 0...UInt16.max)
    var feedbackRecorder: TransportFeedbackRecorder?
    var transportFeedbackSent = 0
    var send: ([UInt8]) -> Void = { _ in }
    private(set) var phase = Phase.joining
    var joinStartedAt = MediaTime.now()
    /// Set when the run hangs up: a close from the server is then expected, not an error.
    var leaving = false
    private(set) var establishedAt: MediaTime?

    private let dtlsContext: DTLSContext
    private var ice: ICEClientRole?
    /// The server's candidate, as the XOR-MAPPED-ADDRESS of our answers to its own checks.
    private var serverAddress: TransportAddress?
    private var pendingCheck: TransactionID?
    private var nextCheckAt = MediaTime(nanoseconds: 0)
    private var dtls: DTLSEndpoint?
    var srtp: OpenSSLSRTPTransform?
    private var frameIndex = 0
    /// How this participant decides on DTX (`LoadDTX`), and the decision once answered: a
    /// silent participant in DTX sends one frame in 20 (every 400 ms, WebRTC's comfort-noise
    /// update interval) and lets the RTP timestamp run on over the gaps (RFC 7587 §3.1.3).
    var dtxMode = LoadDTX.negotiated
    private(set) var sendsDTX = false
    /// When the next 20 ms frame is due: each participant keeps its own phase, as real
    /// clients do, and a late loop is caught up by at most three frames sent.
    private var nextFrameAt: MediaTime?
    /// Until when `tick` has nothing to do: a silent listener in DTX, established, with no
    /// camera and no transport-cc feedback to send, between its comfort-noise updates and
    /// consent checks. The shard's 5 ms loop skips it until then; in a big room that is most
    /// participants on most loops, and the generator shares the machine with the server.
    private(set) var idleUntil = MediaTime(nanoseconds: 0)
    private var sequenceNumber = UInt16.random(in: 0...UInt16.max)
    private var timestamp = UInt32.random(in: 0...UInt32.max)
    /// The audio header, kept between packets so that only its values change: with the typed
    /// level element inline, serializing it allocates nothing (`RTPHeaderFields`).
    private lazy var audioHeader = RTPHeaderFields(
        payloadType: PayloadType(masking: LoadSDP.opusPayloadType), sequenceNumber: 0, timestamp: 0,
        ssrc: SSRC(audioSSRC),
        extensions: [RTPHeaderExtensionElement(id: LoadSDP.audioLevelExtensionID,
                                               value: .audioLevel(AudioLevelIndication(voiceActivity: false, level: 127)))])
    /// Audio streams received (the mix), by SSRC.
    private(set) var streams: [UInt32: ReceivedStream] = [:]
    /// Video state (`LoadParticipant+Video`), one per layer: the next camera frame, its due
    /// time and RTP state.
    var videoSenders: [VideoSender]
    /// Video streams received in the slots, by SSRC, and the frames completed (marker bits).
    var videoStreams: [UInt32: ReceivedStream] = [:]
    var videoFramesReceived = 0
    var keyframeRequestsReceived = 0
    private var probe: OpusDecoder?
    private var pcm = [Int16](repeating: 0, count: 5_760)
    /// The RTP timestamp of the last mix frame that carried the burst tone, and when it came.
    private var lastBurstFrameTimestamp: UInt32?
    private var lastBurstFrameArrival = MediaTime(nanoseconds: 0)
    /// Mouth-to-ear latencies measured by this probe, milliseconds, and when.
    private(set) var latencies: [(at: MediaTime, ms: Double)] = []
    /// The burst starts this probe detected an onset of (what a missed onset is told from).
    private(set) var detectedBursts: Set<MediaTime> = []
    /// When this probe heard an onset of a burst it had already heard: the tone came back after
    /// 200 ms without it, an artifact (a mix encoder replaying its history did this), not a
    /// latency. With the hole it came after, in the stream's time and in arrival time: a hole
    /// in both is a mix that went on without the tone; one in the stream only is a jump of
    /// the timestamps (ticks the server dropped).
    private(set) var repeatedOnsets: [(at: MediaTime, hole: LoadResults.OnsetHole)] = []
    /// The measured window: the audio received in it is held against what the streams' own
    /// timing says was sent (`WindowRate`), by SSRC.
    var window = (from: MediaTime(nanoseconds: .max), until: MediaTime(nanoseconds: .max))
    private(set) var windowRates: [UInt32: WindowRate] = [:]
    var isProbe: Bool { probe != nil }
    var errors: [String] = []
    /// The event loop the participant lives on once handed over (nil when a unit test drives
    /// it directly, on the test's thread).
    private var loop: (any EventLoop)?

    init(room: Int, userId: String, audio: LoadAudio?, timeline: RoomTimeline, isBurstTalker: Bool, isProbe: Bool,
         dtlsContext: DTLSContext, video: LoadCamera? = nil, slots: Int = 0, role: Role = .member,
         owner: LoadParticipant? = nil) {
        self.role = role
        self.owner = owner
        self.room = room
        self.video = video
        var ssrcs: [UInt32] = []
        while ssrcs.count < max(video?.layers.count ?? 1, 1) {
            let ssrc = UInt32.random(in: 1...UInt32.max)
            if !ssrcs.contains(ssrc) { ssrcs.append(ssrc) }
        }
        videoSSRCs = ssrcs
        videoSenders = ssrcs.map { _ in VideoSender() }
        self.slots = video == nil ? 0 : slots
        self.userId = userId
        self.audio = audio
        self.timeline = timeline
        self.isBurstTalker = isBurstTalker
        self.dtlsContext = dtlsContext
        probe = isProbe ? try? OpusDecoder() : nil
    }

    /// The hand-over: from now on every call comes on `loop` (called there, before `start`).
    func confine(to loop: any EventLoop) {
        loop.preconditionInEventLoop()
        self.loop = loop
    }

    func offer(host: String = "127.0.0.1", port: Int, tcp: Bool = false) -> String {
        LoadSDP.offer(ice: localICE, fingerprint: dtlsContext.certificate.sdpFingerprint, host: host, port: port,
                      media: .init(audioSSRC: audio == nil ? nil : audioSSRC, videoSSRC: video == nil ? nil : videoSSRC,
                                   slots: slots, simulcastRIDs: video?.rids ?? [], transportCC: offersTransportCC,
                                   tcp: tcp))
    }

    /// Our answer to the server's offer (a subscriber connection), remembering its VP8 type.
    func answer(toOffer offer: String, host: String, port: Int) -> String {
        let answer = LoadSDP.answer(toOffer: offer, ice: localICE, fingerprint: dtlsContext.certificate.sdpFingerprint,
                                    host: host, port: port)
        if let payloadType = answer.videoPayloadType { videoPayloadType = payloadType }
        return answer.sdp
    }

    /// The answer arrived: start ICE toward its candidate.
    /// `controlling` is false when the server made the offer (it controls ICE then).
    func start(_ answer: LoadSDP.Answer, now: MediaTime, controlling: Bool = true) {
        ice = ICEClientRole(local: localICE, remote: answer.ice, tieBreaker: UInt64.random(in: 0...UInt64.max),
                            isControlling: controlling)
        serverAddress = TransportAddress(ipv4: answer.host, port: UInt16(clamping: answer.port))
        sendsDTX = audio?.isSilence == true
            && (dtxMode == .on || (dtxMode == .negotiated && answer.usesDTX))
        if offersTransportCC, answer.transportCC {
            feedbackRecorder = TransportFeedbackRecorder()
            audioHeader.extensions.append(RTPHeaderExtensionElement(
                id: LoadSDP.transportWideCCExtensionID, value: .transportSequenceNumber(0)))
        }
        if video?.isSimulcast == true, !answer.simulcast {
            fail("the server declined the camera's simulcast")
            return
        }
        do {
            dtls = try DTLSEndpoint(context: dtlsContext, role: answer.serverIsPassive ? .client : .server,
                                    remoteFingerprints: [answer.fingerprint])
        } catch {
            phase = .failed("DTLS setup: \(error)")
            return
        }
        phase = .checking
        nextCheckAt = now
        tick(now: now)
    }

    func fail(_ reason: String) {
        phase = .failed(reason)
        errors.append(reason)
    }

    /// Every 20 ms: connectivity checks until answered (then consent refreshes every 5 s),
    /// DTLS retransmissions, and one audio frame once established.
    func tick(now: MediaTime) {
        loop?.preconditionInEventLoop()
        switch phase {
        case .joining, .failed:
            return
        case .checking, .handshaking, .established:
            break
        }
        if now >= nextCheckAt, let ice {
            let id = TransactionID.random()
            pendingCheck = id
            send(ice.bindingRequest(transactionID: id, useCandidate: true))
            nextCheckAt = now.adding(milliseconds: phase == .established ? 5_000 : 100)
        }
        if phase == .handshaking, let dtls {
            handle(dtls.handleTimeout(now: now), now: now)
        }
        guard phase == .established else { return }
        if audio != nil { tickAudio(now: now) }
        if video != nil { tickVideo(now: now) }
        if feedbackRecorder != nil { sendTransportFeedback(now: now) }
        if sendsDTX, video == nil, feedbackRecorder == nil, let nextFrameAt {
            idleUntil = min(nextCheckAt, Self.nextDTXUpdate(from: nextFrameAt, frameIndex: frameIndex))
        }
    }

    private func tickAudio(now: MediaTime) {
        var next = nextFrameAt ?? now.adding(nanoseconds: UInt64.random(in: 0..<20_000_000))
        var sent = 0
        // Frames that DTX leaves out do not count: a listener the loop skipped (`idleUntil`)
        // passes over them here, its timestamp running on as they would have.
        while next <= now, sent < 3 {
            if sendAudio(now: now) { sent += 1 }
            next = next.adding(milliseconds: 20)
        }
        nextFrameAt = next <= now ? now.adding(milliseconds: 20) : next
    }

    /// When a participant in DTX next sends: the first frame from `frameIndex` (due at
    /// `nextFrameAt`, one every 20 ms) that is a comfort-noise update.
    static func nextDTXUpdate(from nextFrameAt: MediaTime, frameIndex: Int) -> MediaTime {
        let framesToUpdate = (dtxUpdateFrames - frameIndex % dtxUpdateFrames) % dtxUpdateFrames
        return nextFrameAt.adding(milliseconds: UInt64(20 * framesToUpdate))
    }

    /// Reception totals, and those of the last interval (for the per-second samples).
    func takeInterval() -> (received: Int, expected: Int) {
        loop?.preconditionInEventLoop()
        var total = (received: 0, expected: 0)
        for key in streams.keys {
            if let interval = streams[key]?.interval() {
                total.received += interval.received
                total.expected += interval.expected
            }
        }
        return total
    }

    /// Sends the next frame, or passes over it in DTX; true when a packet went out.
    private func sendAudio(now: MediaTime) -> Bool {
        guard let srtp, let audio else { return false }
        let index = frameIndex % audio.frames.count
        if sendsDTX, frameIndex % Self.dtxUpdateFrames != 0 {
            frameIndex += 1
            timestamp &+= 960
            return false
        }
        if isBurstTalker, audio.burstStarts.contains(index) { timeline.burstSent(at: now) }
        audioHeader.marker = frameIndex == 0
        audioHeader.sequenceNumber = sequenceNumber
        audioHeader.timestamp = timestamp
        // The RFC 6464 level, V bit clear (as aiortc sends it).
        audioHeader.extensions[0].value = .audioLevel(AudioLevelIndication(voiceActivity: false, level: audio.levels[index]))
        if audioHeader.extensions.count > 1 { audioHeader.extensions[1].value = .transportSequenceNumber(nextTransportSequence()) }
        var packet: [UInt8] = []
        packet.reserveCapacity(20 + audio.frames[index].count + 16)
        do {
            try audioHeader.serialize(into: &packet)
            packet += audio.frames[index]
            try srtp.protectRTP(&packet)
            send(packet)
        } catch {
            errors.append("SRTP protect: \(error)")
        }
        frameIndex += 1
        sequenceNumber &+= 1
        timestamp &+= 960
        return true
    }

    /// Frames per DTX comfort-noise update: 400 ms, as WebRTC's Opus sends them.
    static let dtxUpdateFrames = 20

    /// One datagram from the server (RFC 7983 demultiplexing by the first byte).
    func receive(_ datagram: [UInt8], now: MediaTime) {
        loop?.preconditionInEventLoop()
        switch PacketClass(datagram) {
        case .stun: receiveSTUN(datagram, now: now)
        case .dtls: if let dtls { handle(dtls.handle(datagram, now: now), now: now) }
        case .rtp: receiveSRTP(datagram, now: now)
        case .rtcp:
            // Reports about our streams; only keyframe requests matter to a pre-encoded camera.
            var packet = datagram
            if let srtp, (try? srtp.unprotectRTCP(&packet)) != nil { receiveRTCP(packet) }
        case .unknown: break
        }
    }

    private func receiveSTUN(_ datagram: [UInt8], now: MediaTime) {
        guard let ice else { return }
        // A full-ICE server (Janus) checks the pair from its side too and waits for our answer.
        if let serverAddress, let response = ice.respond(to: datagram, from: serverAddress) {
            send(response)
            return
        }
        guard let id = pendingCheck else { return }
        guard case .success = ice.validateResponse(datagram, transactionID: id) else { return }
        pendingCheck = nil
        guard phase == .checking else { return }
        nextCheckAt = now.adding(milliseconds: 5_000)
        phase = .handshaking
        if let dtls { handle(dtls.start(now: now), now: now) }
    }

    private func handle(_ output: DTLSOutput, now: MediaTime) {
        for datagram in output.datagrams { send(datagram) }
        switch output.event {
        case .connected(let keys)?:
            do {
                srtp = try OpenSSLSRTPTransform(keys)
                phase = .established
                establishedAt = now
            } catch {
                fail("SRTP keys: \(error)")
            }
        case .failed(let error)?:
            fail("DTLS: \(error)")
        case .closed?:
            if !leaving { fail("DTLS closed by the server") }
        case nil:
            break
        }
    }

    private func receiveSRTP(_ datagram: [UInt8], now: MediaTime) {
        guard let srtp else { return }
        var packet = datagram
        guard (try? srtp.unprotectRTP(&packet)) != nil, let rtp = try? RTPPacket(parsing: packet) else { return }
        let header = rtp.header
        if feedbackRecorder != nil { recordArrival(rtp, now: now) }
        // The server's probes (padding on the slots' RTX stream) are neither audio nor video.
        if header.payloadType.rawValue == LoadSDP.rtxPayloadType, offersTransportCC { return }
        if header.payloadType.rawValue == videoPayloadType {
            videoStreams[header.ssrc.rawValue, default: ReceivedStream(clockRate: 90_000)]
                .received(sequenceNumber: header.sequenceNumber, timestamp: header.timestamp, arrival: now)
            if header.marker { videoFramesReceived += 1 }
            return
        }
        streams[header.ssrc.rawValue, default: ReceivedStream(clockRate: 48_000)]
            .received(sequenceNumber: header.sequenceNumber, timestamp: header.timestamp, arrival: now)
        if now >= window.from, now < window.until {
            windowRates[header.ssrc.rawValue, default: WindowRate()]
                .received(timestamp: header.timestamp, marker: header.marker, at: now)
        }
        if probe != nil { decodeProbe(rtp.payload, timestamp: header.timestamp, now: now) }
    }

    /// Decodes the mix and times the burst onsets (a probe listener only).
    private func decodeProbe(_ payload: ArraySlice<UInt8>, timestamp: UInt32, now: MediaTime) {
        guard let probe, !payload.isEmpty else { return }
        let samples = payload.withUnsafeBufferPointer { input in
            pcm.withUnsafeMutableBufferPointer { output in (try? probe.decode(input, into: output)) ?? 0 }
        }
        guard samples > 0 else { return }
        let share = pcm.withUnsafeBufferPointer { LoadAudio.burstShare(UnsafeBufferPointer(rebasing: $0[0..<samples])) }
        guard share > 0.3 else { return }
        // An onset: the first burst frame 200 ms or more after the last one in the stream's own
        // time (its RTP timestamps, which run on while the server sends nothing for a silent
        // mix): a server or generator that stalls mid-burst delivers the rest of it late, and
        // that is latency, not a second onset.
        // A step back of more than 10 s is a new timeline, not a reordered packet.
        let gap = lastBurstFrameTimestamp.map { Int32(bitPattern: timestamp &- $0) }
        let startsOnset = gap.map { $0 >= 9_600 || $0 < -480_000 } ?? true
        if startsOnset, let sent = timeline.burst(before: now) {
            if detectedBursts.insert(sent).inserted {
                latencies.append((now, Double(now.nanoseconds(since: sent)) / 1e6))
            } else {
                let hole = LoadResults.OnsetHole(streamMs: Double(gap ?? 0) / 48,
                                                 arrivalMs: Double(now.nanoseconds(since: lastBurstFrameArrival)) / 1e6)
                repeatedOnsets.append((now, hole))
            }
        }
        if startsOnset || (gap ?? 0) > 0 {
            lastBurstFrameTimestamp = timestamp
            lastBurstFrameArrival = now
        }
    }

}
