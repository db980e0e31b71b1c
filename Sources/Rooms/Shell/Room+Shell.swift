import ChorusCore
import ICELite
import Dispatch
import Foundation
import PeerTransport

extension Room {
    /// A read's datagrams for this room, in arrival order, then one carry-out: the replies and
    /// forwards of all of them leave in one batch (a video frame's packets in one `sendmmsg`).
    func handleDatagrams(_ datagrams: ArraySlice<ReceivedDatagram>) {
        for item in datagrams {
            guard let connection = item.receiver as? ParticipantConnection else { continue }
            core.receive(item.datagram, from: item.source, callId: connection.callId, now: item.time, into: &output)
        }
        carryOut()
    }

    /// Carries out what the core's last step produced: its datagrams leave in one batch (a
    /// fanned-out step's on the lanes' senders, `sendLaneBatches`), the routing table follows
    /// the participants' paths, events are logged and published. Then the output is emptied
    /// (keeping its storage) and the timer of a room with nothing to tick for (no participant,
    /// no recording or forward) stops.
    func carryOut() {
        // Events first: a leave is said on the event stream before the peer's goodbye leaves.
        for event in output.events { publish(event) }
        for change in output.routing { apply(change) }
        sendLaneBatches()
        if !output.transmits.isEmpty { media?.sink.send(batch: output.transmits) }
        writeRecording()
        RoomMetrics.add(output.counters)
        output.removeAll()
        if !core.needsTicks { stopTicks() }
    }

    /// A fanned-out step's batches (`AudioStage+Lanes`), each handed to its lane's sender
    /// (`LaneSenders`) and sent there while this room goes on: on loopback and small packets the
    /// send system call is most of a listener's cost, and the room's thread need not wait for it.
    private func sendLaneBatches() {
        guard let sink = media?.sink, output.laneTransmits.contains(where: { !$0.isEmpty }) else { return }
        // As many senders as the room may use lanes (a step of a smaller room uses fewer).
        let senders = laneSenders ?? LaneSenders(lanes: max(media?.lanes ?? 1, output.laneTransmits.count),
                                                 label: "chorus.room.\(key)")
        laneSenders = senders
        // One step in flight: the previous step's batches have left before this step's are
        // handed over. The room computed this step while they were sending; letting it run
        // further ahead only queued audio in the lanes (measured: 130 ms more mouth-to-ear in a
        // room of 2,500, and more CPU, with no bound but the lanes' backlog).
        senders.drain()
        for lane in output.laneTransmits.indices where !output.laneTransmits[lane].isEmpty {
            // The batch goes to the sender; the lane starts the next step with a new array of
            // the same capacity (emptying this one in place would copy it, being shared).
            let batch = output.laneTransmits[lane]
            output.laneTransmits[lane] = []
            output.laneTransmits[lane].reserveCapacity(batch.count)
            senders.send(batch, lane: lane, sink: sink)
        }
        // The step's other datagrams (the tick's RTCP reports, probes, timer retransmissions)
        // follow the first lane's batch: sent on the room's thread they were 6 % of a 3,000
        // room's tick there. Only a fanned-out step's: a datagram step's few answers leave at
        // once, and nothing queues behind the drain. Order among them is kept (one queue);
        // against a later step's answers it need not be (RTCP, STUN and DTLS retransmissions
        // are each order-free).
        if !output.transmits.isEmpty {
            let transmits = output.transmits
            output.transmits = []
            output.transmits.reserveCapacity(transmits.count)
            senders.send(transmits, lane: 0, sink: sink)
        }
    }

    private func apply(_ change: RoutingChange) {
        guard let routing = media?.routing else { return }
        switch change {
        case .register(let ufrag, let callId):
            let connection = ParticipantConnection(callId: callId, room: self)
            connection.setHasVideo(core.participantHasVideo(callId))
            connections[callId] = connection
            routing.register(ufrag: ufrag, receiver: connection)
        case .bind(let address, let callId):
            guard let connection = connections[callId] else { return }
            routing.bind(address, to: connection)
        case .unregister(let ufrag, let callId):
            routing.unregister(ufrag: ufrag)
            connections[callId] = nil
        case .unbind(let address):
            routing.unbind(address)
        case .registerSSRCs(let ssrcs, let callId):
            guard let connection = connections[callId] else { return }
            for ssrc in ssrcs { routing.register(ssrc: ssrc, receiver: connection) }
        case .unregisterSSRCs(let ssrcs):
            for ssrc in ssrcs { routing.unregister(ssrc: ssrc) }
        }
    }

    /// Logs an event (buffered for `Last-Event-ID`, pushed to subscribers) and hands it to the
    /// observer, stamped with the wall-clock time of the step that produced it.
    func publish(_ event: TimedRoomEvent) {
        let date = core.wallClock.date(at: event.at)
        let logged = log.append(event.event, at: date)
        observer?(key, logged)
    }

    // MARK: control calls, delegated to the core at the clock's `now`

    /// Admits a participant (see `RoomCore.join`) and starts the room's ticks.
    public func join(_ request: JoinRequest) throws(JoinError) -> JoinAnswer {
        let answer = try core.join(request, now: clock.now(), into: &output)
        carryOut()
        startTicksIfNeeded()
        return answer
    }

    /// Ends a call (see `RoomCore.end`). Returns false when there was no such call.
    @discardableResult
    public func end(_ callId: CallID, cause: EndCause) -> Bool {
        let ended = core.end(callId, cause: cause, now: clock.now(), into: &output)
        carryOut()
        return ended
    }

    /// Mutes/unmutes audio, pauses/resumes video, sets pinned publishers (see `RoomCore.update`).
    public func update(_ callId: CallID, audioMuted: Bool?, videoPaused: Bool?, pinned: [CallID]? = nil,
                       slotHeights: [SlotHeight]? = nil) -> ParticipantSnapshot?
    {
        let snapshot = core.update(callId, audioMuted: audioMuted, videoPaused: videoPaused, pinned: pinned,
                                   slotHeights: slotHeights, now: clock.now(), into: &output)
        carryOut()
        return snapshot
    }

    /// A re-offer: restarts ICE when its credentials are new (see `RoomCore.renegotiate`).
    public func renegotiate(_ callId: CallID, offer: String) throws(RestartError) -> RestartAnswer {
        defer {
            carryOut()
            connections[callId]?.setHasVideo(core.participantHasVideo(callId))
        }
        return try core.renegotiate(callId, offer: offer, now: clock.now(), into: &output)
    }

    /// ICE restart with the peer's new credentials (see `RoomCore.restartICE`).
    public func restartICE(_ callId: CallID, remote: ICECredentials) throws(RestartError) -> RestartAnswer {
        defer { carryOut() }
        return try core.restartICE(callId, remote: remote, now: clock.now(), into: &output)
    }

    public func participantList() -> [ParticipantSnapshot] { core.participantList() }

    public func participant(_ callId: CallID) -> ParticipantSnapshot? { core.participant(callId) }

    /// True when `userId` has a call in this room (a user may then read the room's events).
    public func hasParticipant(userId: UserID) -> Bool { core.hasParticipant(userId: userId) }

    /// Counts of participants by state, for /metrics.
    public func stateCounts() -> (progressing: Int, established: Int) { core.stateCounts() }
}
