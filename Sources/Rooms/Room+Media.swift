import ChorusCore
import Dispatch
import Foundation
import Metrics
import PeerTransport
import RTCP
import RTP

extension Room {
    /// Room tick: 20 ms, the audio frame length the mixer will run on. Today it drives the
    /// transports' timers (DTLS retransmissions, consent, RTCP reports).
    static let tickMilliseconds = 20

    /// One datagram for `callId`, on the room's queue (see `ParticipantConnection`).
    func handleDatagram(_ datagram: [UInt8], from source: TransportAddress, at now: MediaTime, callId: CallID) {
        // Only the transport reference: copying the whole participant per packet cost a retain
        // and release of each of its fields (measured at 1,000 participants).
        guard let transport = participants[callId]?.transport else { return }
        lastPacketTime = now
        sink?.begin()  // a video packet fans out to its viewers in one batch
        defer { sink?.flush() }
        switch transport.receive(datagram, from: source, now: now) {
        case .success(let event?):
            handle(event, for: callId)
        case .success(nil):
            break
        case .failure(let reason):
            RoomMetrics.drop(reason)
        }
    }

    func handle(_ event: TransportEvent, for callId: CallID) {
        // Media first, without copying the participant (the per-packet path).
        switch event {
        case .rtp(let packet):
            // Audio goes to the mixer; the camera's video to the forwarder.
            guard let audioType = participants[callId]?.audio.payloadType, let rtp = try? RTPPacket(parsing: packet)
            else { return }
            if rtp.header.payloadType.rawValue == audioType {
                receiveAudio(rtp, callId: callId, now: lastPacketTime)
            } else {
                receiveVideo(packet, header: rtp.header, callId: callId, now: lastPacketTime)
            }
            return
        case .rtcp(let compound):
            guard let packets = try? RTCPCompoundPacket(parsing: compound) else { return }
            receiveAudioFeedback(packets, callId: callId)
            receiveVideoFeedback(packets, callId: callId, now: lastPacketTime)
            return
        default:
            break
        }
        guard let participant = participants[callId] else { return }
        switch event {
        case .addressValidated(let address), .nominated(let address):
            if participant.boundAddresses.insert(address).inserted {
                media?.routing.bind(address, to: participant.connection)
                participants[callId] = participant
            }
        case .connected(let profile):
            participant.state = .established
            participant.establishedAt = Date()
            participant.srtpProfile = profile.openSSLName
            participants[callId] = participant
            RoomMetrics.handshakes(ok: true)
            emit("participant.established", [
                "callId": .string(callId.rawValue), "userId": .string(participant.userId.rawValue),
                "srtpProfile": .string(profile.openSSLName),
            ])
            reassignSlots(now: lastPacketTime)
        case .failed(let reason):
            RoomMetrics.handshakes(ok: false)
            logger.info("call failed", metadata: ["callId": "\(callId)", "reason": "\(reason)"])
            end(callId, cause: .failed)
        case .closed:
            end(callId, cause: .hungUp)
        case .consentExpired:
            end(callId, cause: .timeout)
        case .rtp, .rtcp:
            break  // handled above
        }
    }

    /// Ends a call: stops routing to it, forgets it, and emits `participant.ended` with the
    /// cause and the connection's counters. Returns false when there was no such call.
    @discardableResult
    public func end(_ callId: CallID, cause: EndCause) -> Bool {
        guard let participant = participants.removeValue(forKey: callId) else { return false }
        mixer.removeParticipant(callId)
        joinOrder.removeAll { $0 == callId }
        recentSpeakers.removeAll { $0 == callId }
        for id in joinOrder { participants[id]?.video.publisher?.estimates[callId] = nil }
        reassignSlots(now: lastPacketTime)
        media?.routing.unregister(ufrag: participant.ufrag)
        for address in participant.boundAddresses { media?.routing.unbind(address) }
        let counters = participant.transport.counters
        emit("participant.ended", [
            "callId": .string(callId.rawValue), "userId": .string(participant.userId.rawValue),
            "endCause": .string(cause.rawValue), "established": .bool(participant.establishedAt != nil),
            "media": .object(counters.fields), "audio": .object(participant.audio.statistics.mapValues { .int($0) }),
            "video": .object(participant.video.statistics.fields.mapValues { .int($0) }),
        ])
        if participants.isEmpty {
            timer?.cancel()
            timer = nil
        }
        return true
    }

    func startTimerIfNeeded() {
        guard timer == nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        // Every room ticks on one process-wide 20 ms grid: Dispatch then fires all rooms' timers
        // in one wake-up of its timer thread, and the worker threads run the rooms' ticks back
        // to back instead of waking for each room at its own phase.
        let period = UInt64(Self.tickMilliseconds) * 1_000_000
        let first = (DispatchTime.now().uptimeNanoseconds / period + 1) * period
        timer.schedule(deadline: DispatchTime(uptimeNanoseconds: first),
                       repeating: .milliseconds(Self.tickMilliseconds), leeway: .milliseconds(1))
        timer.setEventHandler { [weak self] in
            self?.assumeIsolated { $0.runTicks(now: .now()) }
        }
        timer.resume()
        self.timer = timer
    }

    /// Runs the 20 ms audio ticks due on the tick grid (`TickGrid`: late firings caught up,
    /// slightly early ones not skipped), then the video and transport work.
    func runTicks(now: MediaTime) {
        sink?.begin()
        defer { sink?.flush() }
        tickGrid.run(at: now) { audioTick(now: $0) }
        videoTick(now: now)
        pollTransports(now: now)
    }

    /// Polls the transports whose deadline has passed (a scan per tick, never per packet).
    func pollTransports(now: MediaTime) {
        for callId in joinOrder {
            guard let transport = participants[callId]?.transport, transport.nextDeadline <= now else { continue }
            if let event = transport.poll(now: now) { handle(event, for: callId) }
        }
    }
}

/// Media-path counters of the rooms, exported on /metrics.
enum RoomMetrics {
    static func drop(_ reason: TransportDropReason) {
        Counter(label: "chorus_media_dropped_total", dimensions: [("reason", reason.rawValue)]).increment()
    }

    static func handshakes(ok: Bool) {
        Counter(label: "chorus_dtls_handshakes_total", dimensions: [("result", ok ? "ok" : "failed")]).increment()
    }
}
