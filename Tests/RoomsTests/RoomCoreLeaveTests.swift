import ChorusCore
import ChorusTestSupport
import RTCP
import Rooms
import Testing

/// How calls end, driven through `RoomCore` with client peers on a simulated clock: the server
/// says goodbye (RTCP BYE for every stream it sends, then DTLS close_notify) whenever it ends a
/// call, a peer's close_notify ends its call at once, a BYE alone ends nothing, and a peer that
/// proves it is alive only with authenticated media keeps its call.
@Suite("RoomCore: leaving and liveness on a simulated clock")
struct RoomCoreLeaveTests {
    /// Every SSRC named in the BYEs `peer` received.
    func goodbyes(_ peer: ClientPeer) -> Set<UInt32> {
        Set(peer.rtcpReceived.flatMap { packet -> [UInt32] in
            guard case .goodbye(let bye) = packet else { return [] }
            return bye.sources.map(\.rawValue)
        })
    }

    func endCause(_ room: SimulatedRoom, _ name: String) -> String? {
        let id = room.callId(name)
        for timed in room.events {
            if case .participantEnded(let end) = timed.event, end.member.callId == id { return end.cause.rawValue }
        }
        return nil
    }

    @Test(arguments: [EndCause.kicked, .hungUp, .timeout, .serverShutdown])
    func theServerSaysGoodbyeWhenItEndsACall(cause: EndCause) throws {
        let room = try SimulatedRoom(seed: 7)
        try room.join("ann", fixture: "aiortc-av-2slots.sdp")
        try room.join("bob")
        room.talk(milliseconds: 500)
        let ann = room.peers["ann"]!
        #expect(ann.closedByServerAt == nil && goodbyes(ann).isEmpty)
        let endedAt = room.now
        #expect(room.end("ann", cause: cause))
        room.run(milliseconds: 100)
        // The mix, both video slots and their RTX streams: every SSRC the answer gave ann.
        let announced = Set(ann.answerSSRCs.values)
        #expect(announced.count >= 3)
        #expect(announced.isSubset(of: goodbyes(ann)), "BYE named \(goodbyes(ann)), the answer \(announced)")
        let closedAt = try #require(ann.closedByServerAt, "no close_notify reached ann")
        #expect(closedAt.nanoseconds(since: endedAt) < 50_000_000)
        #expect(endCause(room, "ann") == cause.rawValue)
        // Bob is still in his call and was told nothing.
        #expect(room.peers["bob"]!.closedByServerAt == nil && room.snapshot("bob")?.state == .established)
    }

    @Test func closingTheRoomSaysGoodbyeToEveryone() throws {
        let room = try SimulatedRoom(seed: 8)
        for name in ["ann", "bob", "cid"] { try room.join(name) }
        room.talk(milliseconds: 300)
        #expect(room.core.close(cause: .roomClosed, now: room.now, into: &room.output))
        room.carryOut()
        room.run(milliseconds: 100)
        for name in ["ann", "bob", "cid"] {
            #expect(room.peers[name]!.closedByServerAt != nil, "\(name) was not told")
            #expect(endCause(room, name) == "roomClosed")
        }
    }

    @Test func aPeersCloseNotifyEndsItsCallAtOnceAsHungUp() throws {
        let room = try SimulatedRoom(seed: 9)
        try room.join("ann")
        try room.join("bob")
        room.talk(milliseconds: 300)
        let hungUpAt = room.now
        for transmit in room.peers["ann"]!.hangUp() { room.send(transmit, from: room.peers["ann"]!) }
        room.run(milliseconds: 50)
        #expect(endCause(room, "ann") == "hungUp")
        let ended = try #require(room.events.first { $0.event.name == .participantEnded })
        #expect(ended.at.nanoseconds(since: hungUpAt) < 20_000_000)
        #expect(room.snapshot("bob")?.state == .established)
    }

    @Test func aBYEFromThePeerIsNotALeave() throws {
        let room = try SimulatedRoom(seed: 10)
        try room.join("ann")
        try room.join("bob")
        room.talk(milliseconds: 300)
        let ann = room.peers["ann"]!
        var compound: [UInt8] = []
        try ReceiverReport(ssrc: SSRC(ann.audioSSRC), reportBlocks: []).serialize(into: &compound)
        try #require(Goodbye(sources: [SSRC(ann.audioSSRC)], reason: "replaceTrack")).serialize(into: &compound)
        room.send(try #require(ann.rtcp(compound)), from: ann)
        room.talk(milliseconds: 1_000)
        #expect(endCause(room, "ann") == nil)
        #expect(room.snapshot("ann")?.state == .established)
        #expect(ann.closedByServerAt == nil)
    }

    /// libnice (GStreamer's webrtcbin) sends no consent checks after connecting, only media
    /// and unsigned indications: the media must keep the call; silence on the path ends it.
    @Test func authenticatedMediaKeepsConsentAndItsAbsenceEndsTheCallCleanly() throws {
        let room = try SimulatedRoom(seed: 11)
        try room.join("ann")
        try room.join("bob")
        room.say("ann", frequency: 500)
        // 45 s with no checks after the join's: well past the 30 s consent timeout.
        room.talk(milliseconds: 45_000)
        #expect(endCause(room, "ann") == nil && endCause(room, "bob") == nil)
        #expect(room.snapshot("ann")?.state == .established)
        // Now ann goes silent on the wire (bob keeps sending): 30 s later her call times out,
        // and she is told.
        room.microphones["ann"] = nil
        let silentAt = room.now
        room.talk(milliseconds: 31_000)
        #expect(endCause(room, "ann") == "timeout")
        let ended = try #require(room.events.first { $0.event.name == .participantEnded })
        let after = Double(ended.at.nanoseconds(since: silentAt)) / 1e9
        #expect(after > 29 && after < 31, "ended \(after) s after going silent")
        #expect(room.peers["ann"]!.closedByServerAt != nil)
        #expect(endCause(room, "bob") == nil)
    }
}

/// ICE restart on the simulated clock: new credentials both ways, the call and its DTLS and
/// SRTP kept, media flowing through it, the old ufrag forgotten.
@Suite("RoomCore: ICE restart on a simulated clock")
struct RoomCoreRestartTests {
    func heardFrames(_ peer: ClientPeer, from ssrc: UInt32?) -> Int {
        peer.received.values.reduce(0) { $0 + $1.count }
    }

    @Test func aRestartKeepsTheCallAndMediaFlowsThroughout() throws {
        let room = try SimulatedRoom(seed: 21)
        let ann = try room.join("ann")
        let bob = try room.join("bob")
        room.say("ann", frequency: 500)
        room.talk(milliseconds: 500)
        let oldUfrag = try #require(room.core.participantUfrag(room.callId("ann")))
        let reoffer = try ann.restartICE()
        let answer = try room.core.renegotiate(room.callId("ann"), offer: reoffer, now: room.now, into: &room.output)
        room.carryOut()
        #expect(answer.restarted && answer.ufrag != oldUfrag)
        #expect(answer.sdp.contains("a=ice-ufrag:\(answer.ufrag)") && answer.sdp.contains("o=- "))
        try ann.acceptRestart(answer: answer.sdp)
        // Media keeps flowing on the old path until the new generation is nominated.
        bob.clearReceived()
        room.talk(milliseconds: 400)
        #expect(heardFrames(bob, from: nil) > 15, "bob heard \(heardFrames(bob, from: nil)) frames during the restart")
        let check = try #require(ann.connectivityCheck())
        room.send(check, from: ann)
        room.talk(milliseconds: 100)
        #expect(ann.lastCheckOutcome == .success(mappedAddress: ann.address))
        bob.clearReceived()
        room.talk(milliseconds: 1_000)
        #expect(heardFrames(bob, from: nil) > 40)
        #expect(room.snapshot("ann")?.state == .established)
        #expect(room.eventNames(["participant.iceRestarted"]) == ["participant.iceRestarted:ann"])
        #expect(room.eventNames(["participant.ended"]).isEmpty)
        // The same credentials again restart nothing.
        let again = try room.core.renegotiate(room.callId("ann"), offer: try ann.offer(), now: room.now, into: &room.output)
        #expect(!again.restarted && again.ufrag == answer.ufrag)
    }

    @Test func aReofferThatChangesTheFingerprintOrTheMediaIsRefused() throws {
        let room = try SimulatedRoom(seed: 22)
        try room.join("ann")
        let other = try ClientPeer(name: "eve", port: 49_999, seed: 99)
        #expect(throws: RestartError.fingerprintChanged) {
            try room.core.renegotiate(room.callId("ann"), offer: try other.offer(), now: room.now, into: &room.output)
        }
        let video = try ClientPeer(name: "vid", port: 49_998, fixture: "aiortc-av-2slots.sdp", seed: 98)
        #expect(throws: (any Error).self) {
            try room.core.renegotiate(room.callId("ann"), offer: try video.offer(), now: room.now, into: &room.output)
        }
        #expect(room.snapshot("ann")?.state == .established)
    }

    @Test func aRestartThatNeverCompletesEndsTheCallAfterTheConsentTimeout() throws {
        let room = try SimulatedRoom(seed: 23)
        let ann = try room.join("ann")
        try room.join("bob")
        room.say("ann", frequency: 500)
        let restartedAt = room.now
        _ = try room.core.renegotiate(room.callId("ann"), offer: try ann.restartICE(), now: room.now, into: &room.output)
        room.carryOut()
        room.talk(milliseconds: 31_000)
        let ended = try #require(room.events.first { $0.event.name == .participantEnded })
        let after = Double(ended.at.nanoseconds(since: restartedAt)) / 1e9
        #expect(after > 29 && after < 31)
    }
}

/// NAT rebinding on the simulated clock: the peer's packets start coming from a new port with
/// no new check or nomination of its own. Its authentic SRTP from there makes the server check
/// the address; once the peer answers, media follows within well under a second and the old
/// address stops counting. Packets that do not authenticate, or replays, move nothing.
@Suite("RoomCore: NAT rebinding on a simulated clock")
struct RoomCoreRebindingTests {
    @Test func mediaFollowsARebindingPeerAndTheOldAddressStopsCounting() throws {
        let room = try SimulatedRoom(seed: 31)
        let ann = try room.join("ann")
        try room.join("bob")
        room.say("bob", frequency: 900)
        room.talk(milliseconds: 500)
        let oldAddress = ann.address
        // A packet of ann's, captured on the way, replayed later from elsewhere.
        let captured = try #require(room.microphones["ann"].flatMap { microphone -> Transmit? in
            var microphone = microphone
            defer { room.microphones["ann"] = microphone }
            return microphone.nextPacket(from: ann)
        })
        room.send(captured, from: ann)
        room.talk(milliseconds: 100)

        ann.rebind(port: 45_000)
        ann.clearReceived()
        let rebindAt = room.now
        var heardAt: MediaTime?
        room.run(milliseconds: 2_000) { now in
            for (name, peer) in room.peers {
                if let packet = room.microphones[name]?.nextPacket(from: peer) { room.send(packet, from: peer) }
            }
            if heardAt == nil, !ann.received.isEmpty { heardAt = now }
        }
        let resumed = try #require(heardAt, "no media reached ann at her new address")
        #expect(resumed.nanoseconds(since: rebindAt) < 600_000_000, "gap \(resumed.nanoseconds(since: rebindAt) / 1_000_000) ms")
        #expect(room.snapshot("ann")?.counters.pathChanges == 1)
        #expect(room.snapshot("ann")?.state == .established)

        // The old address no longer counts: a packet from it is not routed to the call.
        let unroutedBefore = room.unrouted
        ann.rebind(port: oldAddress.port)
        if let packet = room.microphones["ann"]?.nextPacket(from: ann) { room.send(packet, from: ann) }
        room.run(milliseconds: 50)
        #expect(room.snapshot("ann")?.counters.pathChanges == 1)
        ann.rebind(port: 45_000)
        _ = unroutedBefore

        // A replayed packet, and forged ones with ann's SSRC, from a stranger: nothing moves.
        let stranger = try #require(TransportAddress(ipv4: "10.0.0.66", port: 6_666))
        room.network.send(captured.datagram, from: stranger, to: SimulatedRoom.server, now: room.now)
        var forged = captured.datagram
        forged[forged.count - 1] ^= 0xFF
        room.network.send(forged, from: stranger, to: SimulatedRoom.server, now: room.now)
        room.talk(milliseconds: 1_000)
        #expect(room.snapshot("ann")?.counters.pathChanges == 1)
        #expect(!ann.received.isEmpty)
    }
}
