import AudioMixer
import ChorusCore
import ChorusTestSupport
import Rooms
import Testing

/// Recording through `RoomCore` on a simulated clock: the full mix and each participant's own
/// track, read back from the bytes the core hands its shell and decoded with libopus, so what a
/// file holds is heard, not assumed.
@Suite("RoomCore recording on a simulated clock")
struct RoomCoreRecordingTests {
    /// The power of each frequency (dBFS) in `bytes`' audio between `from` and `to` seconds.
    func levels(_ bytes: [UInt8], at frequencies: [Double], from: Double, to: Double) throws -> [Double] {
        let audio = try OggReader(bytes).decoded()
        let window = Array(audio[min(audio.count, Int(from * 48_000))..<min(audio.count, Int(to * 48_000))])
        #expect(window.count > 9_600, "only \(window.count) samples between \(from) and \(to) s")
        return frequencies.map { Spectrum.powerDB(of: window, at: $0) }
    }

    /// Ann (500 Hz) and dan (silent) in a room recorded per participant for a second so far.
    func annTalkingToDanWhileRecorded(seed: UInt64) throws -> SimulatedRoom {
        let room = try SimulatedRoom(seed: seed)
        for name in ["ann", "dan"] { try room.join(name) }
        room.say("ann", frequency: 500)
        room.talk(milliseconds: 300)
        try room.core.startRecording(id: "rec_\(seed)", perParticipant: true, now: room.now, into: &room.output)
        room.carryOut()
        room.talk(milliseconds: 1_000)
        return room
    }

    func track(_ summary: RecordingSummary, _ room: SimulatedRoom, _ name: String) throws -> RecordingTrackSummary {
        try #require(summary.tracks.first { $0.callId == room.callId(name) }, "no track for \(name)")
    }

    /// Ann (500 Hz) and bob (900 Hz) talk, dan listens; cid (1,500 Hz) joins a second into the
    /// recording and bob leaves a second later. Each track holds its own participant's voice
    /// and nobody else's, starts where its participant came in against the mix, and ends (its
    /// file closed) when the participant leaves; the mix holds everyone.
    @Test func eachTrackIsItsParticipantsOwnVoiceOnTheMixsTimeline() throws {
        let room = try SimulatedRoom(seed: 5)
        for name in ["ann", "bob", "dan"] { try room.join(name) }
        room.say("ann", frequency: 500)
        room.say("bob", frequency: 900)
        room.talk(milliseconds: 500)
        try room.core.startRecording(id: "rec_1", perParticipant: true, now: room.now, into: &room.output)
        room.carryOut()
        room.talk(milliseconds: 1_000)
        try room.join("cid")
        room.say("cid", frequency: 1_500)
        room.talk(milliseconds: 1_000)
        #expect(room.end("bob", cause: .hungUp))
        #expect(room.closedTracks == [room.callId("bob")])
        room.talk(milliseconds: 1_000)
        let summary = try #require(room.core.stopRecording(now: room.now, into: &room.output))
        room.carryOut()

        #expect(Set(summary.tracks.map(\.callId)) == Set(["ann", "bob", "cid", "dan"].map(room.callId)))
        #expect(room.closedTracks.count == 4)
        let mix = summary.durationSeconds
        #expect(abs(mix - 3.1) < 0.05, "the mix lasts \(mix) s")
        let ann = try track(summary, room, "ann"), bob = try track(summary, room, "bob")
        let cid = try track(summary, room, "cid"), dan = try track(summary, room, "dan")
        #expect(ann.offsetSeconds == 0 && abs(ann.durationSeconds - mix) < 0.03)
        #expect(bob.offsetSeconds == 0 && abs(bob.durationSeconds - 2.1) < 0.05, "bob: \(bob)")
        #expect(cid.offsetSeconds > 1.0 && cid.offsetSeconds < 1.3, "cid: \(cid)")
        #expect(abs(cid.offsetSeconds + cid.durationSeconds - mix) < 0.03, "cid does not end with the mix: \(cid)")

        let tones: [Double] = [500, 900, 1_500]
        for (name, own) in [("ann", 0), ("bob", 1), ("cid", 2)] {
            let bytes = try #require(room.recordedTracks[room.callId(name)])
            let reader = OggReader(bytes)
            #expect(reader.ended, "\(name)'s track has no end-of-stream page")
            #expect(reader.comments.contains("CHORUS_USER_ID=\(name)"))
            #expect(reader.comments.contains("CHORUS_CALL_ID=\(room.callId(name).rawValue)"))
            let heard = try levels(bytes, at: tones, from: 0.3, to: name == "cid" ? 1.8 : 0.9)
            for (index, level) in heard.enumerated() {
                if index == own {
                    #expect(level > -30, "\(name)'s track has its own tone only at \(level) dBFS")
                } else {
                    #expect(level < -55, "\(name)'s track has \(tones[index]) Hz at \(level) dBFS")
                }
            }
        }
        let silent = try levels(try #require(room.recordedTracks[room.callId("dan")]), at: tones, from: 0.2, to: 3)
        #expect(silent.allSatisfy { $0 < -60 }, "dan's track is not silent: \(silent)")
        #expect(dan.offsetSeconds == 0)
        // The mix: ann and bob in its first second, ann and cid in its last.
        let early = try levels(room.recordedMix, at: tones, from: 0.3, to: 0.9)
        let late = try levels(room.recordedMix, at: tones, from: 2.6, to: 3.2)
        #expect(early[0] > -35 && early[1] > -35 && early[2] < -50, "mix early: \(early)")
        #expect(late[0] > -35 && late[1] < -50 && late[2] > -35, "mix late: \(late)")
    }

    /// A participant the room mutes is not heard in the room, and not in its track either.
    @Test func aMutedParticipantsTrackIsSilence() throws {
        let room = try annTalkingToDanWhileRecorded(seed: 6)
        _ = room.core.update(room.callId("ann"), audioMuted: true, videoPaused: nil, now: room.now, into: &room.output)
        room.carryOut()
        room.talk(milliseconds: 1_000)
        _ = try #require(room.core.stopRecording(now: room.now, into: &room.output))
        room.carryOut()
        let bytes = try #require(room.recordedTracks[room.callId("ann")])
        #expect(try levels(bytes, at: [500], from: 0.2, to: 0.9)[0] > -30)
        #expect(try levels(bytes, at: [500], from: 1.2, to: 1.9)[0] < -60)
    }

    /// Without `perParticipant` only the mix is written; a recording keeps an empty room ticking
    /// (its silence belongs to the recording's timeline), and nothing else does.
    @Test func onlyTheMixUnlessAskedAndARecordingKeepsAnEmptyRoomTicking() throws {
        let room = try SimulatedRoom(seed: 7)
        try room.join("ann")
        room.say("ann", frequency: 500)
        #expect(room.core.needsTicks)
        try room.core.startRecording(id: "rec_3", now: room.now, into: &room.output)
        room.carryOut()
        room.talk(milliseconds: 500)
        #expect(room.end("ann", cause: .hungUp))
        #expect(room.core.needsTicks)
        room.talk(milliseconds: 500)
        let summary = try #require(room.core.stopRecording(now: room.now, into: &room.output))
        room.carryOut()
        #expect(!room.core.needsTicks)
        #expect(summary.tracks.isEmpty && room.recordedTracks.isEmpty)
        #expect(abs(summary.durationSeconds - 1.0) < 0.05)
        #expect(try levels(room.recordedMix, at: [500], from: 0.6, to: 0.99)[0] < -60)
    }

    /// A stall longer than the tick grid catches up (an overloaded machine) loses ticks; the
    /// recording fills them with silence, so the mix and the tracks keep wall-clock time.
    @Test func ticksLostToAStallAreSilenceInTheMixAndTheTracks() throws {
        let room = try annTalkingToDanWhileRecorded(seed: 8)
        room.stall(milliseconds: 500)
        room.talk(milliseconds: 1_000)
        let summary = try #require(room.core.stopRecording(now: room.now, into: &room.output))
        room.carryOut()
        #expect(abs(summary.durationSeconds - 2.5) < 0.03, "the mix lasts \(summary.durationSeconds) s")
        let ann = try track(summary, room, "ann")
        #expect(abs(ann.durationSeconds - summary.durationSeconds) < 0.03, "ann: \(ann)")
        let bytes = try #require(room.recordedTracks[room.callId("ann")])
        #expect(try levels(bytes, at: [500], from: 1.6, to: 2.4)[0] > -30, "ann's tone is not after the stall")
    }
}
