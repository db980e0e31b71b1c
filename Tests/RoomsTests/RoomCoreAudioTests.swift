import AudioMixer
import Foundation
import ChorusCore
import ChorusTestSupport
import Rooms
import Testing

/// The room's audio policy, driven through `RoomCore` with client peers on a simulated clock:
/// what each listener hears is decoded and measured (Goertzel), never assumed.
@Suite("RoomCore audio on a simulated clock")
struct RoomCoreAudioTests {
    static let tones: [String: Double] = ["ann": 500, "bob": 900, "cid": 1_500, "dan": 2_100]

    /// Joins `talkers` (each with its tone) and `listeners` (silent), runs `milliseconds` with
    /// everyone sending, and returns the room.
    func talk(talkers: [String], listeners: [String] = [], milliseconds: Int = 3_000, seed: UInt64 = 1,
              audio: AudioEncoding = AudioEncoding(),
              configure: (SimulatedRoom) -> Void = { _ in }) throws -> SimulatedRoom {
        let room = try SimulatedRoom(seed: seed, audio: audio)
        for name in talkers + listeners {
            try room.join(name)
            room.say(name, frequency: talkers.contains(name) ? Self.tones[name] : nil)
        }
        configure(room)
        for name in talkers + listeners {
            #expect(room.peers[name]?.isConnected == true, "\(name) did not connect")
            #expect(room.snapshot(name)?.state == .established)
        }
        room.talk(milliseconds: milliseconds)
        return room
    }

    @Test func everyoneHearsTheOthersButNotThemselves() throws {
        let room = try talk(talkers: ["ann", "bob", "cid"], listeners: ["dan"])
        let frequencies = ["ann", "bob", "cid"].map { Self.tones[$0]! }
        for name in ["ann", "bob", "cid", "dan"] {
            let levels = try PeerEar.levels(heardBy: room.peers[name]!, at: frequencies)
            for (talker, level) in zip(["ann", "bob", "cid"], levels) {
                if talker == name {
                    #expect(level < -60, "\(name) hears its own voice at \(level) dBFS")
                } else {
                    #expect(level > -30, "\(name) hears \(talker) only at \(level) dBFS")
                }
            }
        }
        // One encode for the full mix and one per mixed speaker, per tick, at most.
        #expect(room.core.audioEncodeCount <= 4 * 150 + 8)
        #expect(room.eventNames(["talking.started"]).sorted() == ["talking.started:ann", "talking.started:bob",
                                                                 "talking.started:cid"])
    }

    /// CELT-only mixes (`--opus-mode celt`): every mix the room encodes is CELT (RFC 6716 TOC
    /// configuration 16-31), and everyone still hears the others and not themselves.
    @Test func celtModeMixesAreCELTAndHeard() throws {
        let room = try talk(talkers: ["ann", "bob", "cid"], listeners: ["dan"], audio: AudioEncoding(mode: .celt))
        let frequencies = ["ann", "bob", "cid"].map { Self.tones[$0]! }
        for name in ["ann", "dan"] {
            let peer = try #require(room.peers[name])
            let levels = try PeerEar.levels(heardBy: peer, at: frequencies)
            for (talker, level) in zip(["ann", "bob", "cid"], levels) {
                if talker == name { #expect(level < -60) } else { #expect(level > -30, "\(name) hears \(talker) at \(level)") }
            }
            let mixes = try #require(peer.answerSSRCs["0"].flatMap { peer.received[$0] })
            #expect(mixes.count > 100)
            #expect(mixes.allSatisfy { $0.payload.first.map { $0 >> 3 >= 16 } ?? false })
        }
    }

    /// A silent participant pausing in DTX sends one packet every 400 ms, each with the level
    /// -127 dBov. Nobody can hear it, so the room runs no decoder for it, neither on its packets
    /// nor between them (concealing a quiet stream's gaps cost a decode per tick).
    /// A talker sending 40 or 60 ms packets is heard in every 20 ms of the mix, not only in
    /// the tick its packet is decoded in: the ticks served from the rest of a packet are audio
    /// too (they were once reported as silence, and the mix dropped them).
    @Test(arguments: [2, 3]) func longPacketsAreHeardInEveryTick(framesPerPacket: Int) throws {
        let room = try talk(talkers: ["ann"], listeners: ["dan"]) { room in
            room.microphones["ann"]?.framesPerPacket = framesPerPacket
        }
        let heard = try PeerEar.heard(by: try #require(room.peers["dan"]))
        // 3 s of talk, less the jitter buffer's start: a mix packet for every 20 ms tick.
        #expect(heard.count >= 48 * 2_700, "dan heard \(heard.count / 48) ms of 3,000")
        let lastSecond = Array(heard.suffix(48_000))
        let quiet = stride(from: 0, to: lastSecond.count - 959, by: 960).filter { start in
            Spectrum.powerDB(of: Array(lastSecond[start..<(start + 960)]), at: Self.tones["ann"]!) < -30
        }
        #expect(quiet.isEmpty, "\(quiet.count) of 50 frames without ann's tone")
    }

    @Test func aQuietParticipantPausingInDTXIsNeitherDecodedNorConcealed() throws {
        let room = try SimulatedRoom(seed: 3)
        for name in ["ann", "dan"] { try room.join(name) }
        room.say("ann", frequency: 500)
        var ticks = 0
        room.run(milliseconds: 3_000) { _ in
            ticks += 1
            for name in ["ann", "dan"] {
                guard let peer = room.peers[name] else { continue }
                if name == "dan", ticks % 20 != 1 {
                    room.microphones[name]?.skipFrame()
                } else if let packet = room.microphones[name]?.nextPacket(from: peer) {
                    room.send(packet, from: peer)
                }
            }
        }
        let dan = try #require(room.snapshot("dan")?.audioStatistics)
        #expect(dan["packetsReceived"]! >= 7)
        // Every tick after its first packet played: skipped, not decoded or concealed.
        #expect(dan["skippedDecodes"]! >= ticks - 10, "\(dan)")
        #expect(try PeerEar.levels(heardBy: room.peers["dan"]!, at: [500])[0] > -30)
    }

    /// The tick reaches a mix's recipients by their mixer slot. A slot freed by a departure and
    /// taken by the next joiner must carry the newcomer's stream, never the departed one's.
    @Test func aJoinerTakingADepartedParticipantsMixerSlotHearsTheRoom() throws {
        let room = try talk(talkers: ["ann", "bob"], listeners: ["cid"], milliseconds: 1_000)
        let cid = try #require(room.peers["cid"])
        let cidSSRC = try #require(cid.answerSSRCs["0"])
        #expect(room.end("cid", cause: .hungUp))
        room.talk(milliseconds: 200)  // what was on the simulated wire arrives
        let heardBeforeLeaving = cid.received[cidSSRC]?.count ?? 0
        try room.join("dan")
        room.say("dan", frequency: nil)
        room.talk(milliseconds: 2_000)
        #expect(cid.received[cidSSRC]?.count ?? 0 == heardBeforeLeaving, "the departed cid still gets a mix")
        let dan = try #require(room.peers["dan"])
        let levels = try PeerEar.levels(heardBy: dan, at: [Self.tones["ann"]!, Self.tones["bob"]!])
        #expect(levels.allSatisfy { $0 > -30 }, "dan hears the talkers only at \(levels) dBFS")
        for name in ["ann", "bob"] {
            let other = name == "ann" ? "bob" : "ann"
            let heard = try PeerEar.levels(heardBy: room.peers[name]!, at: [Self.tones[name]!, Self.tones[other]!])
            #expect(heard[0] < -60 && heard[1] > -30, "\(name) hears \(heard) dBFS (itself, \(other))")
        }
    }

    /// A pause of the only talker makes dan's mix silent: nothing is sent, and the stream's
    /// timestamp moves on by exactly the silent ticks, which the statistics count (they are
    /// caught up when next needed, not tick by tick), while the sequence number does not; the
    /// first packet after the pause carries the marker bit (RFC 3551 §4.1).
    @Test func aSilentMixMovesTheTimestampByItsTicksAndCountsThem() throws {
        let room = try talk(talkers: ["ann"], listeners: ["dan"], milliseconds: 1_000)
        let silentBefore = try #require(room.snapshot("dan")?.audioStatistics["mixFramesSilent"])
        room.say("ann", frequency: nil)
        room.talk(milliseconds: 1_000)
        room.say("ann", frequency: Self.tones["ann"])
        room.talk(milliseconds: 1_000)
        let silent = try #require(room.snapshot("dan")?.audioStatistics["mixFramesSilent"]) - silentBefore
        #expect(silent > 20, "\(silent) silent ticks in a second's pause")
        let dan = try #require(room.peers["dan"])
        let packets = try #require(dan.answerSSRCs["0"].flatMap { dan.received[$0] })
        var gaps: [(frames: Int, marker: Bool)] = []
        for (previous, packet) in zip(packets, packets.dropFirst()) {
            #expect(packet.header.sequenceNumber == previous.header.sequenceNumber &+ 1)
            let frames = Int(packet.header.timestamp &- previous.header.timestamp) / 960
            if frames != 1 { gaps.append((frames, packet.header.marker)) }
        }
        #expect(gaps.count == 1 && gaps.first?.frames == silent + 1 && gaps.first?.marker == true, "\(gaps)")
    }

    @Test func aSingleTalkerIsRelayedNotReencoded() throws {
        let room = try talk(talkers: ["ann"], listeners: ["bob", "cid"])
        for name in ["bob", "cid"] {
            let levels = try PeerEar.levels(heardBy: room.peers[name]!, at: [500])
            #expect(levels[0] > -30, "\(name) does not hear ann")
            let audio = try #require(room.snapshot(name)?.audioStatistics)
            #expect(audio["mixFramesRelayed"]! > 100, "relayed \(audio["mixFramesRelayed"]!) of \(audio["mixFramesSent"]!)")
        }
        // The talker alone hears a silent mix, which is not sent.
        #expect(room.snapshot("ann")?.audioStatistics["mixFramesSent"] ?? 0 < 10)
        #expect(room.core.audioEncodeCount < 20)
        // Nobody needs the relayed packets' samples: the talker is not decoded either.
        let ann = try #require(room.snapshot("ann")?.audioStatistics)
        #expect(ann["undecodedFrames"]! > 100, "\(ann)")
    }

    /// A lone talker is held undecoded; when a second one starts, the first is decoded again
    /// (from a restarted decoder) and everyone hears the real mix.
    @Test func aLoneTalkerJoinedBySecondIsMixedAgain() throws {
        let room = try talk(talkers: ["ann"], listeners: ["bob", "cid"], milliseconds: 2_000)
        let undecoded = try #require(room.snapshot("ann")?.audioStatistics["undecodedFrames"])
        #expect(undecoded > 60)
        room.say("bob", frequency: Self.tones["bob"])
        room.talk(milliseconds: 2_000)
        let ann = try #require(room.snapshot("ann")?.audioStatistics)
        #expect(ann["undecodedFrames"]! < undecoded + 20, "ann stayed undecoded while mixed: \(ann)")
        let heard = try PeerEar.levels(heardBy: room.peers["cid"]!, at: [500, 900], lastMilliseconds: 1_000)
        #expect(heard.allSatisfy { $0 > -30 }, "cid hears ann and bob at \(heard) dBFS")
        let bob = try PeerEar.levels(heardBy: room.peers["bob"]!, at: [500, 900], lastMilliseconds: 1_000)
        #expect(bob[0] > -30 && bob[1] < -60, "bob hears \(bob) dBFS (ann, itself)")
        let annHears = try PeerEar.levels(heardBy: room.peers["ann"]!, at: [500, 900], lastMilliseconds: 1_000)
        #expect(annHears[0] < -60 && annHears[1] > -30, "ann hears \(annHears) dBFS (itself, bob)")
    }

    /// The full mix's encoder sits out the ticks its mix is relayed (one talker alone). When
    /// it encodes again it starts afresh: ann's tone, the last thing it encoded before the
    /// pause, must not ring again in the first packets after it (its history carried ~5 ms of
    /// that tone into the next packet, heard as a second onset of it).
    @Test func aMixEncoderBackFromARelayedStretchDoesNotReplayWhatItEncodedBefore() throws {
        let room = try talk(talkers: ["ann", "bob"], listeners: ["cid", "eve"], milliseconds: 1_000)
        room.say("ann", frequency: nil)
        room.talk(milliseconds: 1_000)
        let eve = try #require(room.peers["eve"])
        let relayedFrom = try PeerEar.heard(by: eve).count
        #expect(room.snapshot("eve")?.audioStatistics["mixFramesRelayed"] ?? 0 > 30)
        room.say("cid", frequency: Self.tones["cid"])
        room.talk(milliseconds: 1_000)
        let heard = try PeerEar.heard(by: eve)
        let frames = stride(from: relayedFrom, to: heard.count - 960, by: 960).map { start in
            Array(heard[start..<(start + 960)])
        }
        let ann = frames.map { Spectrum.powerDB(of: $0, at: Self.tones["ann"]!) }
        // Measured: at most -57 dBFS per frame; -36 in the frame after the pause before the fix.
        #expect(ann.allSatisfy { $0 < -50 }, "ann's tone rings again after the relayed stretch: \(ann) dBFS")
        let both = Spectrum.powerDB(of: Array(heard.suffix(500 * 48)), at: Self.tones["cid"]!)
        #expect(both > -30, "eve hears cid at \(both) dBFS")
    }

    /// A listener that starts talking gets its own mix from an encoder that continues the
    /// full mix's stream (a copy of its state), so what it hears of the others goes on without
    /// a break where it switches from the full mix to its own. Measured as the part of each
    /// 20 ms that is not ann's and bob's tones (a least-squares fit of the two).
    @Test func aNewSpeakersOwnMixContinuesTheFullMixStream() throws {
        let room = try talk(talkers: ["ann", "bob"], listeners: ["cid", "dan"], milliseconds: 1_000)
        let dan = try #require(room.peers["dan"])
        let switchFrom = try PeerEar.heard(by: dan).count
        let continuations = room.core.audioEncoderContinuations
        room.say("dan", frequency: Self.tones["dan"])
        room.talk(milliseconds: 1_000)
        #expect(room.core.audioEncoderContinuations > continuations)
        try Self.expectNoBreak(heardBy: dan, from: switchFrom - 10 * 960)
    }

    /// A speaker's pause between words (a few ticks of silence, the hangover keeps it a
    /// speaker) is sent the full mix's encode; when it talks again, its own encoder continues
    /// that stream, so what it hears of the others goes on without a break there (measured
    /// before: a frame whose residual was -5 dB against -30 around it). The pause's start,
    /// where the speaker's stream goes over to the full mix's encoder, still has a smaller one
    /// (about -10 dB): that encoder cannot take a copy of any one speaker's state, and keeping
    /// the speaker's own encoder for 1-5 more ticks did not remove it (-14 to -20 dB).
    @Test func aSpeakersOwnMixAfterAPauseContinuesTheFullMixStream() throws {
        let room = try talk(talkers: ["ann", "bob", "dan"], listeners: ["cid"], milliseconds: 1_000)
        let dan = try #require(room.peers["dan"])
        let pauseFrom = try PeerEar.heard(by: dan).count
        let continuations = room.core.audioEncoderContinuations
        room.say("dan", frequency: nil)
        room.talk(milliseconds: 200)
        let resumeFrom = try PeerEar.heard(by: dan).count
        #expect(resumeFrom > pauseFrom + 8 * 960)
        room.say("dan", frequency: Self.tones["dan"])
        room.talk(milliseconds: 800)
        #expect(room.core.audioEncoderContinuations > continuations)
        try Self.expectNoBreak(heardBy: dan, from: resumeFrom - 2 * 960)
    }

    /// Expects what `peer` heard of ann's and bob's tones from sample `start` on to have no
    /// break: no 20 ms whose residual after the two tones (`residualDB`) stands 6 dB above the
    /// median (the codec's own noise, about -30 dB here).
    static func expectNoBreak(heardBy peer: ClientPeer, from start: Int) throws {
        let heard = try PeerEar.heard(by: peer)
        let residuals = stride(from: start, to: heard.count - 960, by: 960).map { frame in
            residualDB(Array(heard[frame..<(frame + 960)]), tones: [tones["ann"]!, tones["bob"]!])
        }
        let worst = try #require(residuals.max()), typical = residuals.sorted()[residuals.count / 2]
        #expect(worst < typical + 6, "a break in what \(peer.name) hears: \(residuals.map { Int($0) }) dB")
    }

    /// The power of what is left of `frame` after a least-squares fit of sines at `tones`
    /// (each a whole number of cycles in the frame, so the fit is a projection), relative to
    /// the frame's power, in dB.
    static func residualDB(_ frame: [Int16], tones: [Double]) -> Double {
        let x = frame.map { Double($0) }
        var fit = [Double](repeating: 0, count: x.count)
        for tone in tones {
            let omega = 2 * Double.pi * tone / 48_000
            let sine = x.indices.map { sin(omega * Double($0)) }, cosine = x.indices.map { cos(omega * Double($0)) }
            let a = zip(x, sine).reduce(0) { $0 + $1.0 * $1.1 } * 2 / Double(x.count)
            let b = zip(x, cosine).reduce(0) { $0 + $1.0 * $1.1 } * 2 / Double(x.count)
            for index in fit.indices { fit[index] += a * sine[index] + b * cosine[index] }
        }
        let residual = zip(x, fit).reduce(0) { $0 + ($1.0 - $1.1) * ($1.0 - $1.1) }
        let power = x.reduce(0) { $0 + $1 * $1 }
        return 10 * log10(max(residual, 1e-9) / max(power, 1e-9))
    }

    @Test func theDominantSpeakerFollowsWhoTalks() throws {
        let room = try SimulatedRoom()
        for name in ["ann", "bob", "cid"] { try room.join(name) }
        func speak(_ talker: String, milliseconds: Int) {
            room.say(talker, frequency: Self.tones[talker])
            room.talk(milliseconds: milliseconds)
            room.say(talker, frequency: nil)
        }
        speak("ann", milliseconds: 3_000)
        speak("bob", milliseconds: 4_000)
        let dominant = room.eventNames(["speaker.dominant"])
        #expect(dominant.first == "speaker.dominant:ann")
        #expect(dominant.last == "speaker.dominant:bob")
        #expect(room.eventNames(["talking.stopped"]).contains("talking.stopped:ann"))
    }

    @Test func seededLossAndJitterOnTheWayInAreConcealed() throws {
        let room = try talk(talkers: ["ann"], listeners: ["bob"], milliseconds: 4_000, seed: 42) { room in
            room.network.links[room.peers["ann"]!.address] = .init(lossPercent: 5, delayMilliseconds: 10,
                                                                  jitterMilliseconds: 30)
        }
        #expect(room.network.lost > 0)
        let levels = try PeerEar.levels(heardBy: room.peers["bob"]!, at: [500], lastMilliseconds: 2_000)
        #expect(levels[0] > -30)
        let audio = try #require(room.snapshot("ann")?.audioStatistics)
        #expect(audio["lost"]! + audio["concealedFrames"]! + audio["fecRecoveries"]! > 0)
    }

    @Test func aParticipantLeavingMidCallStopsItsMixAndRouting() throws {
        let room = try talk(talkers: ["ann", "bob"], listeners: ["cid"], milliseconds: 1_500)
        let before = try PeerEar.levels(heardBy: room.peers["cid"]!, at: [500])[0]
        #expect(before > -30)
        // Leave between ticks, with ann's packets still in flight toward the room.
        for _ in 0..<3 {
            if let packet = room.microphones["ann"]?.nextPacket(from: room.peers["ann"]!) {
                room.send(packet, from: room.peers["ann"]!)
            }
        }
        #expect(room.end("ann", cause: .hungUp))
        #expect(!room.end("ann", cause: .hungUp))
        room.peers["cid"]!.clearReceived()
        room.microphones["ann"] = nil
        room.talk(milliseconds: 1_500)
        #expect(room.unrouted >= 3, "ann's late packets must find no route")
        let levels = try PeerEar.levels(heardBy: room.peers["cid"]!, at: [500, 900])
        #expect(levels[1] > -30)
        // What is left at ann's frequency is the codec's noise around bob's tone.
        #expect(levels[0] < before - 20, "ann still heard at \(levels[0]) dBFS (\(before) before leaving)")
        let ann = SSRC(room.peers["ann"]!.audioSSRC)
        let mix = room.peers["cid"]!.received[room.peers["cid"]!.answerSSRCs["0"]!] ?? []
        #expect(mix.count > 60)
        // The first packets were on the wire (5 ms) when ann left; none after them carries her.
        #expect(!mix.dropFirst(2).contains { $0.csrcs.contains(ann) }, "ann still a contributing source after leaving")
        #expect(room.eventNames(["participant.ended"]) == ["participant.ended:ann"])
        #expect(room.core.activeCount == 2)
    }
}
