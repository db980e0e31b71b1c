import AudioMixer
import ChorusCore
import ChorusTestSupport
import Rooms
import Testing

/// The member seam proven with a second kind of member: a plain-RTP member speaking L16 at
/// 8 kHz (a phone's media) joins through `RoomCore.admit` with its `MemberMedia` and a
/// `PlainRTPConnection`, beside WebRTC peers, and no stage knows the difference. What each hears
/// is decoded and measured (Goertzel) at its own rate: the phone at 8 kHz, the peers at 48 kHz.
@Suite("RoomCore: a plain-RTP 8 kHz member beside WebRTC peers")
struct MemberSeamTests {
    /// Power (dBFS) at each frequency in the last 600 ms of what the phone heard, at its rate.
    func levels(heardBy phone: PCMPhone, at frequencies: [Double]) -> [Double] {
        let tail = Array(phone.heard.suffix(600 * phone.clockRate / 1_000))
        return frequencies.map { Spectrum.powerDB(of: tail, at: $0, sampleRate: Double(phone.clockRate)) }
    }

    @Test func aPhoneHearsTheRoomMinusItselfAndIsHeardByThePeers() throws {
        let room = try SimulatedRoom(seed: 11)
        try room.join("ann")
        try room.join("bob")
        let pat = try room.joinPhone("pat")
        room.say("ann", frequency: 500)
        room.say("bob", frequency: nil)
        pat.say(1_000)
        room.talk(milliseconds: 3_000)
        #expect(room.snapshot("pat")?.state == .established)
        // The phone hears ann, never itself.
        let heard = levels(heardBy: pat, at: [500, 1_000])
        #expect(heard[0] > -30, "pat hears ann at \(heard[0]) dBFS")
        #expect(heard[1] < -60, "pat hears itself at \(heard[1]) dBFS")
        // The peers hear the phone; ann not herself.
        let bob = try PeerEar.levels(heardBy: try #require(room.peers["bob"]), at: [500, 1_000, 7_000, 9_000])
        #expect(bob[0] > -30 && bob[1] > -30, "bob hears ann at \(bob[0]), pat at \(bob[1]) dBFS")
        // Upsampled from 8 kHz without images: nothing of pat's tone at 8 kHz ± 1 kHz.
        #expect(bob[2] < -50 && bob[3] < -50, "images of pat's tone: \(bob[2]), \(bob[3]) dBFS")
        let ann = try PeerEar.levels(heardBy: try #require(room.peers["ann"]), at: [500, 1_000])
        #expect(ann[0] < -60 && ann[1] > -30, "ann hears herself at \(ann[0]), pat at \(ann[1]) dBFS")
        // Its stream is at its own clock: 160 timestamp units per 20 ms packet, one SSRC.
        let mix = pat.received.filter { $0.header.ssrc == pat.mixSSRC }
        #expect(mix.count > 120)
        let steps = zip(mix, mix.dropFirst()).map { $1.header.timestamp &- $0.header.timestamp }
        #expect(steps.allSatisfy { $0 % 160 == 0 && $0 > 0 }, "timestamp steps \(Set(steps))")
        // What it sent was received on the mixer's timeline: nothing lost, nothing concealed.
        let statistics = try #require(room.snapshot("pat")?.audioStatistics)
        #expect(statistics["packetsReceived"]! >= 140 && statistics["lost"] == 0, "\(statistics)")
    }

    /// A lone talker's own packet is relayed to listeners of its codec only: a phone talking
    /// alone is encoded for the WebRTC peers (they take Opus), and a peer talking alone is
    /// encoded for the phone (it takes PCM), never sent to it as Opus.
    @Test func aLoneTalkerIsEncodedForListenersOfAnotherCodec() throws {
        let room = try SimulatedRoom(seed: 12)
        try room.join("bob")
        let pat = try room.joinPhone("pat")
        pat.say(1_000)
        room.talk(milliseconds: 2_000)
        let bob = try PeerEar.levels(heardBy: try #require(room.peers["bob"]), at: [1_000])
        #expect(bob[0] > -30, "bob hears the lone phone at \(bob[0]) dBFS")
        pat.say(nil)
        room.say("bob", frequency: 700)
        room.talk(milliseconds: 2_000)
        let heard = levels(heardBy: pat, at: [700])
        #expect(heard[0] > -30, "pat hears the lone peer at \(heard[0]) dBFS")
        #expect(pat.received.allSatisfy { $0.header.payloadType.rawValue == PCMPhone.payloadType })
    }

    /// Leaving works the same for every kind: the phone's address stops routing, it is told
    /// goodbye (RTCP BYE on its mix stream), and the room says `participant.ended`.
    @Test func aPhoneLeavesLikeAnyMember() throws {
        let room = try SimulatedRoom(seed: 13)
        try room.join("bob")
        let pat = try room.joinPhone("pat")
        room.talk(milliseconds: 500)
        #expect(room.end("pat", cause: .hungUp))
        room.talk(milliseconds: 200)
        #expect(room.eventNames(["participant.ended"]) == ["participant.ended:pat"])
        #expect(room.core.activeCount == 1)
        #expect(room.unrouted > 0, "the phone's packets after its leave were not dropped by the router")
        _ = pat
    }
}
