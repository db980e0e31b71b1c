import ChorusCore
import Dispatch
import Foundation
import Metrics
import PeerTransport

extension Room {
    /// Room tick: 20 ms, the audio frame length the mixer will run on. Today it drives the
    /// transports' timers (DTLS retransmissions, consent, RTCP reports).
    static let tickMilliseconds = 20

    /// One datagram for `callId`, on the room's queue (see `ParticipantConnection`).
    func handleDatagram(_ datagram: [UInt8], from source: TransportAddress, at now: MediaTime, callId: CallID) {
        guard let participant = participants[callId] else { return }
        switch participant.transport.receive(datagram, from: source, now: now) {
        case .success(let event?):
            handle(event, for: callId)
        case .success(nil):
            break
        case .failure(let reason):
            RoomMetrics.drop(reason)
        }
    }

    func handle(_ event: TransportEvent, for callId: CallID) {
        guard var participant = participants[callId] else { return }
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
        case .failed(let reason):
            RoomMetrics.handshakes(ok: false)
            logger.info("call failed", metadata: ["callId": "\(callId)", "reason": "\(reason)"])
            end(callId, cause: .failed)
        case .closed:
            end(callId, cause: .hungUp)
        case .consentExpired:
            end(callId, cause: .timeout)
        case .rtp, .rtcp:
            // The mixer and the forwarder consume these (next issues).
            break
        }
    }

    /// Ends a call: stops routing to it, forgets it, and emits `participant.ended` with the
    /// cause and the connection's counters. Returns false when there was no such call.
    @discardableResult
    public func end(_ callId: CallID, cause: EndCause) -> Bool {
        guard let participant = participants.removeValue(forKey: callId) else { return false }
        media?.routing.unregister(ufrag: participant.ufrag)
        for address in participant.boundAddresses { media?.routing.unbind(address) }
        let counters = participant.transport.counters
        emit("participant.ended", [
            "callId": .string(callId.rawValue), "userId": .string(participant.userId.rawValue),
            "endCause": .string(cause.rawValue), "established": .bool(participant.establishedAt != nil),
            "media": .object(counters.fields),
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
        timer.schedule(deadline: .now() + .milliseconds(Self.tickMilliseconds),
                       repeating: .milliseconds(Self.tickMilliseconds), leeway: .milliseconds(1))
        timer.setEventHandler { [weak self] in
            self?.assumeIsolated { $0.tick(now: .now()) }
        }
        timer.resume()
        self.timer = timer
    }

    /// Polls the transports whose deadline has passed (a scan per tick, never per packet).
    func tick(now: MediaTime) {
        for (callId, participant) in participants where participant.transport.nextDeadline <= now {
            if let event = participant.transport.poll(now: now) { handle(event, for: callId) }
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
