import ChorusCore
import Foundation
import Metrics
import PeerTransport
import RTCP
import RTP

extension RoomCore {
    /// One datagram the media port routed to `callId`, arriving at `now`. What it causes —
    /// answers, forwarded video, feedback, events, routing — is appended to `output`.
    public func receive(_ datagram: [UInt8], from source: TransportAddress, callId: CallID, now time: MediaTime,
                        into output: inout RoomOutput) {
        step(at: time, &output) {
            // Only the transport reference: copying the whole participant per packet cost a
            // retain and release of each of its fields (measured at 1,000 participants).
            guard let transport = participants[callId]?.transport else { return }
            switch transport.receive(datagram, from: source, now: now, transmits: &self.output.transmits) {
            case .success(let event?):
                handle(event, for: callId)
            case .success(nil):
                break
            case .failure(let reason):
                RoomMetrics.drop(reason)
            }
        }
    }

    /// One firing of the room's timer at `now`: the 20 ms audio ticks due on the tick grid
    /// (`TickGrid`: late firings caught up, slightly early ones not skipped), then the video
    /// tick and the transports' timers.
    public func tick(now time: MediaTime, into output: inout RoomOutput) {
        step(at: time, &output) {
            let due = tickGrid.advance(at: time)
            roomLoad.note(dueTicks: due.count)
            if due.count > 1 || due.dropped > 0 { RoomMetrics.lateTicks(caughtUp: due.count - 1, dropped: due.dropped) }
            advanceStripes(byTicks: due.count + due.dropped)
            for index in 0..<due.count {
                audioTicksDue &+= 1
                if let every = media?.faults.skipEveryNthAudioTick, every > 1, audioTicksDue % UInt64(every) == 0 {
                    continue
                }
                audioTick(now: due.first.adding(nanoseconds: UInt64(index) &* tickGrid.periodNanoseconds))
            }
            videoTick(now: time)
            pollTransports(now: time)
            qualityTick(now: time)
        }
    }

    /// The transport's parsed values and state changes: media to the mixer and forwarder,
    /// feedback to both (each RTCP packet decoded once), path and call state to the routing
    /// table and the events.
    func handle(_ event: TransportEvent, for callId: CallID) {
        switch event {
        case .rtp(let rtp):
            // Audio goes to the mixer; the camera's video to the forwarder.
            guard let audioType = participants[callId]?.audio.payloadType else { return }
            if rtp.header.payloadType.rawValue == audioType {
                receiveAudio(rtp, callId: callId, now: now)
            } else {
                receiveVideo(rtp, callId: callId, now: now)
            }
        case .rtcp(let compound):
            receiveFeedback(compound, from: callId)
        case .addressValidated(let address), .nominated(let address), .probing(let address):
            if participants[callId]?.boundAddresses.insert(address).inserted == true {
                output.routing.append(.bind(address, callId: callId))
            }
        case .pathChanged(let old, let new):
            // The old address stops counting: its datagrams are no longer routed here.
            if participants[callId]?.boundAddresses.insert(new).inserted == true {
                output.routing.append(.bind(new, callId: callId))
            }
            if participants[callId]?.boundAddresses.remove(old) != nil { output.routing.append(.unbind(old)) }
            logger.info("path changed without nomination (NAT rebinding)", metadata: ["callId": "\(callId)"])
        case .connected(let profile):
            established(callId, profile: profile.openSSLName)
        case .failed(let reason):
            RoomMetrics.handshakes(ok: false)
            logger.info("call failed", metadata: ["callId": "\(callId)", "reason": "\(reason)"])
            endCall(callId, cause: .failed)
        case .closed:
            endCall(callId, cause: .hungUp)
        case .consentExpired:
            endCall(callId, cause: .timeout)
        }
    }

    /// Each packet of a compound, decoded once, to whoever it concerns: sender reports to the
    /// transport (for its receiver reports' LSR/DLSR), report blocks to the mix encoder's FEC,
    /// the rest to the video forwarder.
    private func receiveFeedback(_ compound: RTCPCompoundPacket, from callId: CallID) {
        guard let participant = participants[callId] else { return }
        for packet in compound {
            switch packet {
            case .senderReport(let report):
                participant.transport.receivedSenderReport(report)
                receiveReportBlocks(report.reportBlocks, from: participant)
            case .receiverReport(let report):
                receiveReportBlocks(report.reportBlocks, from: participant)
            default:
                receiveVideoFeedback(packet, callId: callId, now: now)
            }
        }
    }

    private func established(_ callId: CallID, profile: String) {
        guard let participant = participants[callId] else { return }
        participant.state = .established
        if participant.audio.outboundTick == nil { participant.audio.outboundTick = audioTicks }
        participant.establishedAt = wallClock.date(at: now)
        participant.srtpProfile = profile
        RoomMetrics.handshakes(ok: true)
        emit(.participantEstablished, [
            "callId": .string(callId.rawValue), "userId": .string(participant.userId.rawValue),
            "srtpProfile": .string(profile),
        ])
        reassignSlots(now: now)
    }

    /// Ends a call at `now`: stops routing to it, forgets it, and emits `participant.ended`
    /// with the cause and the connection's counters. Returns false when there was no such call.
    @discardableResult
    public func end(_ callId: CallID, cause: EndCause, now time: MediaTime, into output: inout RoomOutput) -> Bool {
        step(at: time, &output) { endCall(callId, cause: cause) }
    }

    @discardableResult
    func endCall(_ callId: CallID, cause: EndCause) -> Bool {
        guard let participant = participants.removeValue(forKey: callId) else { return false }
        endTrack(callId)
        mixer.removeParticipant(callId)
        if let slot = participant.mixerHandle?.slot, membersBySlot.indices.contains(slot),
           membersBySlot[slot] === participant {
            membersBySlot[slot] = nil
        }
        joinOrder.removeAll { $0 == callId }
        members.removeAll { $0 === participant }
        videoMembers.removeAll { $0 === participant }
        recentSpeakers.removeAll { $0 == callId }
        for id in joinOrder { participants[id]?.video.publisher?.estimates[callId] = nil }
        reassignSlots(now: now)
        output.routing.append(.unregister(ufrag: participant.ufrag, callId: callId))
        for address in participant.boundAddresses { output.routing.append(.unbind(address)) }
        if !participant.receivedSources.isEmpty { output.routing.append(.unregisterSSRCs(participant.receivedSources)) }
        let counters = participant.transport.counters
        participant.audio.noteSilentMixes(through: audioTicks)
        if cause == .timeout {
            logger.info("consent expired: no check or authenticated media within the timeout",
                        metadata: ["callId": "\(callId)", "userId": "\(participant.userId)"])
        }
        var ended: [String: EventField] = [
            "callId": .string(callId.rawValue), "userId": .string(participant.userId.rawValue),
            "endCause": .string(cause.rawValue), "established": .bool(participant.establishedAt != nil),
            "media": .object(counters.fields), "audio": .object(participant.audio.statistics.mapValues { .int($0) }),
            "video": .object(participant.video.statistics.fields.mapValues { .int($0) }),
        ]
        if !participant.video.slots.isEmpty { ended["slots"] = participant.slotsRecord }
        if let downlink = participant.downlinkRecord { ended["downlink"] = downlink }
        ended["quality"] = participant.quality.summary
        recordLayerSwitches(of: participant)
        emit(.participantEnded, ended)
        // The leave is on the event stream; now the peer hears it too (BYE, close_notify),
        // unless its DTLS failed, in which case there is no one to tell.
        if cause != .failed { participant.transport.close(sources: participant.sentSources, now: now, transmits: &output.transmits) }
        return true
    }

    /// Polls the transports whose deadline has passed (a scan per tick, never per packet).
    func pollTransports(now: MediaTime) {
        for participant in members {
            let transport = participant.transport
            guard transport.nextDeadline <= now else { continue }
            if let event = transport.poll(now: now, transmits: &output.transmits) { handle(event, for: participant.callId) }
        }
    }
}

/// Media-path counters of the rooms, exported on /metrics.
enum RoomMetrics {
    static func drop(_ reason: TransportDropReason) {
        Counter(label: "chorus_media_dropped_total", dimensions: [("reason", reason.rawValue)]).increment()
    }

    static func goodbyeReceived() {
        Counter(label: "chorus_rtcp_goodbye_received_total").increment()
    }

    /// One mix payload fanned out over lanes (`RoomCore+Lanes`): a room big enough for them.
    static func laneFanOut() {
        Counter(label: "chorus_room_lane_fanouts_total").increment()
    }

    /// Audio ticks run late (caught up on the grid) and dropped (the firing came too late to
    /// catch up): a room falling behind shows here before its listeners hear the gaps.
    static func lateTicks(caughtUp: Int, dropped: Int) {
        if caughtUp > 0 { Counter(label: "chorus_room_audio_ticks_late_total").increment(by: caughtUp) }
        if dropped > 0 { Counter(label: "chorus_room_audio_ticks_dropped_total").increment(by: dropped) }
    }

    static func handshakes(ok: Bool) {
        Counter(label: "chorus_dtls_handshakes_total", dimensions: [("result", ok ? "ok" : "failed")]).increment()
    }
}
